#include <algorithm>
#include <span>
#include <string_view>

#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"
#include "model/machine_pool.h"
#include "model/node_pool.h"
#include "model/queue.h"

namespace gpupool::config {

// ---- File shapes --------------------------------------------------------------------------

std::span<const std::string_view> internal::BodyFields(Kind kind) {
  static constexpr std::string_view kPodTemplate[] = {"apiVersion", "kind", "metadata", "spec",
                                                      "status"};
  static constexpr std::string_view kPodDisruptionBudget[] = {
      "selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"};
  switch (kind) {
    case Kind::kPool:
      return internal::PoolFields();
    case Kind::kPodTemplate:
      return kPodTemplate;
    case Kind::kResourceValidation:
      return {};
    case Kind::kRole:
      return internal::RoleFields();
    case Kind::kBackend:
      return internal::BackendFields();
    case Kind::kNodePool:
      return model::NodePoolFields();
    case Kind::kQueue:
      return model::QueueFields();
    case Kind::kMachinePool:
      return model::MachinePoolFields();
    case Kind::kPodDisruptionBudget:
      return kPodDisruptionBudget;
  }
  return {};
}

namespace {

// {"<name>": {...}, ...}: each entry one body named by its key (a "name" inside must agree).
Result<std::vector<NamedBody>> SplitMapForm(Kind kind, const std::string& what, Json& doc) {
  if (doc.empty()) return InvalidArgumentError("the " + what + " file is an empty object");
  std::vector<NamedBody> out;
  for (auto& [key, value] : doc.get_ref<Json::object_t&>()) {
    bool shape_ok = kind == Kind::kResourceValidation ? value.is_array() : value.is_object();
    if (!shape_ok) {
      return InvalidArgumentError(key + ": expected " +
                                  (kind == Kind::kResourceValidation
                                       ? std::string("a list of rules")
                                       : "an object (the " + what + " \"" + key + "\")") +
                                  ", " + internal::Got(value) +
                                  "; a config file holds {\"name\": ...} or {\"<name>\": {...}}");
    }
    Status s = ValidateName(what, key);
    if (!s.ok()) return s;
    Json body = std::move(value);
    if (body.is_object()) {
      auto inner = body.find("name");
      if (inner != body.end()) {
        if (!inner->is_string() || inner->get<std::string>() != key) {
          return InvalidArgumentError(key + ".name: " + what + " \"" + key +
                                      "\" has a different \"name\" " + internal::Dump(*inner));
        }
        body.erase("name");
      }
    }
    out.push_back(NamedBody{key, std::move(body), /*map_entry=*/true});
  }
  return out;
}

}  // namespace

Result<std::vector<NamedBody>> SplitConfigFile(Kind kind, Json doc,
                                               std::optional<std::string> name_from_cli) {
  std::string what(KindName(kind));
  if (name_from_cli.has_value() && name_from_cli->empty()) name_from_cli.reset();
  if (name_from_cli.has_value()) RETURN_IF_ERROR(ValidateName(what, *name_from_cli));
  // The bodies are moved out of `doc`, never copied: a copy walks the whole tree.
  auto single = [&](std::string name) -> Result<std::vector<NamedBody>> {
    RETURN_IF_ERROR(ValidateName(what, name));
    if (doc.is_object()) doc.erase("name");
    std::vector<NamedBody> out;
    out.push_back(NamedBody{std::move(name), std::move(doc)});
    return out;
  };
  if (kind == Kind::kResourceValidation && doc.is_array()) {
    if (!name_from_cli.has_value()) {
      return InvalidArgumentError(
          "the file holds one RESOURCE_VALIDATION list without a name; give the name on the "
          "command line or write {\"<name>\": [...]}");
    }
    return single(*name_from_cli);
  }
  if (!doc.is_object()) {
    return InvalidArgumentError("a " + what + " file must hold a JSON object, " +
                                internal::Got(doc));
  }
  auto name_it = doc.find("name");
  if (name_it != doc.end() && name_it->is_string()) {
    std::string name = name_it->get<std::string>();
    if (name_from_cli.has_value() && *name_from_cli != name) {
      return InvalidArgumentError("the command names " + what + " \"" + *name_from_cli +
                                  "\" but the file's \"name\" is \"" + name + "\"");
    }
    return single(name);
  }
  // `{}` named on the command line is one empty body, as {"<name>": {}} is: the kind's decoder
  // judges it (an empty POD_TEMPLATE merges nothing), and a stored empty body can be written
  // again as it is shown.
  if (doc.empty() && name_from_cli.has_value()) return single(*name_from_cli);
  std::span<const std::string_view> fields = internal::BodyFields(kind);
  for (const auto& [key, value] : doc.items()) {
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) continue;
    if (!name_from_cli.has_value()) {
      return InvalidArgumentError("the file holds one " + what + " (it has a \"" + key +
                                  "\" field) but no name: add \"name\" to the file or give the "
                                  "name on the command line");
    }
    return single(*name_from_cli);
  }
  // Map form.
  ASSIGN_OR_RETURN(std::vector<NamedBody> out, SplitMapForm(kind, what, doc));
  if (name_from_cli.has_value()) {
    if (out.size() != 1 || out[0].name != *name_from_cli) {
      std::vector<std::string> names;
      for (const NamedBody& nb : out) names.push_back(nb.name);
      return InvalidArgumentError("the command names " + what + " \"" + *name_from_cli +
                                  "\" but the file defines " + Join(names, ", ") +
                                  (out.size() > 1 ? " (omit the name to load them all)" : ""));
    }
  }
  return out;
}

}  // namespace gpupool::config
