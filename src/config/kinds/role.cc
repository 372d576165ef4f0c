#include <algorithm>
#include <cctype>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"

namespace gpupool::config {

using internal::CheckBodyFields;
using internal::CheckBodyName;
using internal::CheckObject;
using internal::ReadBool;
using internal::ReadString;
using internal::ReadStringList;
using internal::StringList;
using internal::TypeError;
using internal::WithName;
using internal::WriteField;

// ---- ROLE ---------------------------------------------------------------------------------

namespace {

// The body's fields besides "name" (internal::RoleFields).
constexpr std::string_view kRoleFields[] = {"description", "actions",   "policies",
                                            "immutable",   "sync_mode", "external_roles"};

const std::vector<std::string> kMethods = {"*",     "get",    "post",     "put",
                                           "patch", "delete", "websocket"};

Status CheckLegacyAction(const LegacyAction& a, std::string_view path) {
  if (a.base != "http") {
    return InvalidArgumentError(std::string(path) + ".base: expected \"http\", got \"" + a.base +
                                "\"");
  }
  std::string_view p = a.path;
  if (StartsWith(p, "http:")) p.remove_prefix(5);
  if (StartsWith(p, "!")) p.remove_prefix(1);
  if (p != "*" && !StartsWith(p, "/")) {
    return InvalidArgumentError(std::string(path) +
                                ".path: expected \"*\" or a path starting "
                                "with \"/\" (optionally \"!\" to deny), got \"" +
                                a.path + "\"");
  }
  if (std::find(kMethods.begin(), kMethods.end(), a.method) == kMethods.end()) {
    return InvalidArgumentError(std::string(path) + ".method: expected one of " +
                                Join(kMethods, ", ") + ", got \"" + a.method + "\"" +
                                DidYouMean(a.method, kMethods));
  }
  return OkStatus();
}

// Seed 000 writes role globs without the leading slash (``api/pool/shared*``); request paths
// always have one, so such a glob would never match. It is stored with the slash added (after an
// optional "http:" and "!"), so what is matched, shown and compared is one spelling.
std::string WithLeadingSlash(std::string_view glob) {
  std::string prefix;
  if (StartsWith(glob, "http:")) {
    prefix += "http:";
    glob.remove_prefix(5);
  }
  if (StartsWith(glob, "!")) {
    prefix += "!";
    glob.remove_prefix(1);
  }
  if (glob.empty() || glob == "*" || StartsWith(glob, "/")) return prefix + std::string(glob);
  return prefix + "/" + std::string(glob);
}

// The path of an action in its string form "http:<path>:<method>" (checked by the caller).
std::string StringActionPath(const std::string& text) {
  return text.substr(5, text.rfind(':') - 5);
}

Result<LegacyAction> LegacyActionFromJson(const Json& e, std::string_view path) {
  LegacyAction a;
  if (e.is_string()) {
    // "http:<path>:<method>"
    std::string text = e.get<std::string>();
    size_t colon = text.rfind(':');
    if (!StartsWith(text, "http:") || colon == std::string::npos || colon < 5) {
      return InvalidArgumentError(std::string(path) +
                                  ": expected \"http:<path>:<method>\", got \"" + text + "\"");
    }
    a.path = StringActionPath(text);
    a.method = ToLower(text.substr(colon + 1));
  } else {
    RETURN_IF_ERROR(CheckObject(e, path, {"base", "path", "method"}));
    RETURN_IF_ERROR(ReadString(e, "base", path, &a.base));
    if (!e.contains("path")) return InvalidArgumentError(std::string(path) + ".path: required");
    RETURN_IF_ERROR(ReadString(e, "path", path, &a.path));
    if (!e.contains("method")) {
      return InvalidArgumentError(std::string(path) + ".method: required");
    }
    RETURN_IF_ERROR(ReadString(e, "method", path, &a.method));
    a.method = ToLower(a.method);
  }
  a.path = WithLeadingSlash(a.path);
  RETURN_IF_ERROR(CheckLegacyAction(a, path));
  return a;
}

Json LegacyActionToJson(const LegacyAction& a) {
  return Json{{"base", a.base}, {"path", a.path}, {"method", a.method}};
}

// ^(\*|[a-z]+):(\*|[A-Z][a-zA-Z]*)$ or "*".
bool IsSemanticAction(std::string_view a) {
  if (a == "*") return true;
  size_t colon = a.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view type = a.substr(0, colon), name = a.substr(colon + 1);
  bool type_ok = type == "*" || (!type.empty() && std::all_of(type.begin(), type.end(), [](char c) {
                   return c >= 'a' && c <= 'z';
                 }));
  bool name_ok = name == "*" || (!name.empty() && name[0] >= 'A' && name[0] <= 'Z' &&
                                 std::all_of(name.begin(), name.end(), [](char c) {
                                   return std::isalpha(static_cast<unsigned char>(c));
                                 }));
  return type_ok && name_ok;
}

Result<Policy> PolicyFromJson(const Json& e, std::string_view path) {
  RETURN_IF_ERROR(CheckObject(e, path, {"effect", "actions", "resources"}));
  Policy p;
  std::string effect = "Allow";
  RETURN_IF_ERROR(ReadString(e, "effect", path, &effect));
  if (ToLower(effect) == "allow") {
    p.effect = Effect::kAllow;
  } else if (ToLower(effect) == "deny") {
    p.effect = Effect::kDeny;
  } else {
    return InvalidArgumentError(codec::FieldPath(path, "effect") +
                                ": expected Allow or Deny, got \"" + effect + "\"");
  }
  auto actions = e.find("actions");
  if (actions == e.end())
    return InvalidArgumentError(codec::FieldPath(path, "actions") + ": required");
  std::string ap = codec::FieldPath(path, "actions");
  if (!actions->is_array()) return TypeError(ap, "a list of actions", *actions);
  for (size_t i = 0; i < actions->size(); ++i) {
    const Json& a = (*actions)[i];
    std::string p2 = codec::IndexPath(ap, i);
    if (a.is_object() || (a.is_string() && StartsWith(a.get<std::string>(), "http:"))) {
      ASSIGN_OR_RETURN(LegacyAction la, LegacyActionFromJson(a, p2));
      p.legacy_actions.push_back(std::move(la));
    } else if (a.is_string()) {
      std::string text = a.get<std::string>();
      if (!IsSemanticAction(text)) {
        return InvalidArgumentError(p2 + ": action \"" + text +
                                    "\" must look like \"workflow:Create\", \"pool:*\" or \"*:*\"");
      }
      p.actions.push_back(text);
    } else {
      return TypeError(p2, "an action string or {base, path, method}", a);
    }
  }
  RETURN_IF_ERROR(ReadStringList(e, "resources", path, &p.resources));
  return p;
}

Json PolicyToJson(const Policy& p) {
  Json out = Json::object();
  if (p.effect == Effect::kDeny) out["effect"] = "Deny";
  Json actions = Json::array();
  for (const std::string& a : p.actions) actions.push_back(a);
  for (const LegacyAction& a : p.legacy_actions) actions.push_back(LegacyActionToJson(a));
  out["actions"] = actions;
  if (!p.resources.empty()) out["resources"] = StringList(p.resources);
  return out;
}

Json PoliciesToJson(const std::vector<Policy>& policies) {
  Json out = Json::array();
  for (const Policy& p : policies) out.push_back(PolicyToJson(p));
  return out;
}

Status DecodeRole(const Json& body, Role& role) {
  RETURN_IF_ERROR(CheckBodyFields(body, kRoleFields));
  RETURN_IF_ERROR(CheckBodyName(body, role.name, "role"));
  RETURN_IF_ERROR(ReadString(body, "description", "", &role.description));
  auto actions = body.find("actions");
  if (actions != body.end()) {
    if (!actions->is_array())
      return TypeError("actions", "a list of {base, path, method}", *actions);
    for (size_t i = 0; i < actions->size(); ++i) {
      ASSIGN_OR_RETURN(LegacyAction a,
                       LegacyActionFromJson((*actions)[i], codec::IndexPath("actions", i)));
      role.actions.push_back(std::move(a));
    }
  }
  auto policies = body.find("policies");
  if (policies != body.end()) {
    if (!policies->is_array()) return TypeError("policies", "a list of policies", *policies);
    for (size_t i = 0; i < policies->size(); ++i) {
      ASSIGN_OR_RETURN(Policy p, PolicyFromJson((*policies)[i], codec::IndexPath("policies", i)));
      role.policies.push_back(std::move(p));
    }
  }
  RETURN_IF_ERROR(ReadBool(body, "immutable", "", &role.immutable));
  RETURN_IF_ERROR(ReadString(body, "sync_mode", "", &role.sync_mode));
  if (!role.sync_mode.empty() && role.sync_mode != "import" && role.sync_mode != "force" &&
      role.sync_mode != "ignore") {
    return InvalidArgumentError("sync_mode: expected import, force or ignore, got \"" +
                                role.sync_mode + "\"");
  }
  auto external = body.find("external_roles");
  if (external != body.end() && !external->is_null()) {
    std::vector<std::string> names;
    RETURN_IF_ERROR(ReadStringList(body, "external_roles", "", &names));
    role.external_roles = names;
  }
  return OkStatus();
}

}  // namespace

std::span<const std::string_view> internal::RoleFields() { return kRoleFields; }

Result<Role> RoleFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("role", name));
  Role role;
  role.name = std::string(name);
  Status s = DecodeRole(body, role);
  if (!s.ok()) return s.WithContext("role \"" + std::string(name) + "\"");
  role.raw = body;
  return role;
}

// Whether every action in `written` spells its path as it is stored (WithLeadingSlash), so the
// actions may be shown as written; `written` decodes to `actions` (checked by the caller).
bool PathsAsStored(const Json& written, const std::vector<LegacyAction>& actions) {
  if (!written.is_array() || written.size() != actions.size()) return false;
  for (size_t i = 0; i < actions.size(); ++i) {
    std::string path;
    if (written[i].is_string()) {
      path = StringActionPath(written[i].get<std::string>());
    } else {
      path = written[i].value("path", "");
    }
    if (path != actions[i].path) return false;
  }
  return true;
}

Json RoleToJson(const Role& role, bool with_name) {
  Json out = WithName(role.raw.is_object() ? role.raw : Json::object(), role.name, with_name);
  WriteField(out, "description", role.description, role.description.empty());
  Json actions = Json::array();
  for (const LegacyAction& a : role.actions) actions.push_back(LegacyActionToJson(a));
  // Keep the actions as written (string or object form) when they are unchanged.
  bool actions_same = false;
  if (role.raw.is_object() && role.raw.contains("actions")) {
    Role reread;
    actions_same = DecodeRole(Json{{"actions", role.raw["actions"]}}, reread).ok() &&
                   reread.actions == role.actions &&
                   PathsAsStored(role.raw["actions"], role.actions);
  }
  if (!actions_same) WriteField(out, "actions", actions, role.actions.empty());
  Json policies = PoliciesToJson(role.policies);
  bool policies_same = false;
  if (role.raw.is_object() && role.raw.contains("policies")) {
    Role reread;
    policies_same = DecodeRole(Json{{"policies", role.raw["policies"]}}, reread).ok() &&
                    PoliciesToJson(reread.policies) == policies;
  }
  if (!policies_same) WriteField(out, "policies", policies, role.policies.empty());
  WriteField(out, "immutable", role.immutable, !role.immutable);
  WriteField(out, "sync_mode", role.sync_mode, role.sync_mode.empty());
  if (role.external_roles.has_value()) {
    WriteField(out, "external_roles", StringList(*role.external_roles), false);
  } else {
    WriteField(out, "external_roles", nullptr, true);
  }
  return out;
}

Result<Role> GeneratePoolRole(std::string_view role_name) {
  if (!StartsWith(role_name, "osmo-") || role_name.size() <= 5) {
    return InvalidArgumentError("pool role name \"" + std::string(role_name) +
                                "\" must be \"osmo-<pool name prefix>\"");
  }
  RETURN_IF_ERROR(ValidateName("role", role_name));
  std::string prefix(role_name.substr(5));
  Role role;
  role.name = std::string(role_name);
  role.description = "Generated Role for pool " + prefix;
  Policy p;
  p.actions = {"workflow:*"};
  p.resources = {"pool/" + prefix + "*"};
  role.policies.push_back(p);
  role.raw = RoleToJson(role);
  return role;
}

}  // namespace gpupool::config
