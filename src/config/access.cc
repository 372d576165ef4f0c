#include "config/access.h"

#include <algorithm>
#include <cctype>

#include "common/safe_text.h"
#include "common/strings.h"

namespace gpupool::config {

namespace {

// `path` as sent: percent-encoded, or raw bytes that a client sent unencoded, shown escaped.
Status Refused(std::string_view path, std::string_view why) {
  return InvalidArgumentError("request path \"" + TerminalSafe(path) +
                              "\" is refused: " + std::string(why));
}

std::string_view LegacyPattern(std::string_view path, bool* deny) {
  if (StartsWith(path, "http:")) path.remove_prefix(5);
  *deny = StartsWith(path, "!");
  if (*deny) path.remove_prefix(1);
  return path;
}

bool MethodMatches(std::string_view pattern, std::string_view method) {
  return pattern == "*" || ToLower(pattern) == ToLower(method);
}

struct Decision {
  bool allowed = false;
  bool denied = false;
};

void EvaluateRole(const Role& role, std::string_view method, std::string_view path,
                  const ResolvedAction& resolved, Decision& d) {
  if (!role.actions.empty() && LegacyPolicyAllows(role.actions, method, path)) d.allowed = true;
  for (const Policy& p : role.policies) {
    if (!p.legacy_actions.empty() && p.effect == Effect::kAllow &&
        LegacyPolicyAllows(p.legacy_actions, method, path)) {
      d.allowed = true;
    }
    if (p.actions.empty()) continue;
    bool action_ok = std::any_of(p.actions.begin(), p.actions.end(), [&](const std::string& a) {
      return ActionMatches(a, resolved.action);
    });
    if (!action_ok) continue;
    bool resource_ok =
        resolved.resource.empty() ||
        std::any_of(p.resources.begin(), p.resources.end(),
                    [&](const std::string& r) { return ResourceMatches(r, resolved.resource); });
    if (!resource_ok) continue;
    if (p.effect == Effect::kDeny) {
      d.denied = true;
    } else {
      d.allowed = true;
    }
  }
}

// True when `path` (its query cut off) is what normalising returns: it starts with '/' and has
// no percent-encoding, backslash, control character or byte above 0x7e (non-ASCII text takes
// the full path, which checks it is UTF-8), and no empty ("//", a trailing '/'), "." or ".."
// segment. Most requests are so; they skip decoding and rebuilding the path.
bool IsAlreadyNormal(std::string_view path) {
  if (path.size() < 2 || path[0] != '/') return path == "/";
  size_t segment_start = 1;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size()) {
      char c = path[i];
      auto u = static_cast<unsigned char>(c);
      if (c == '%' || c == '\\' || u < 0x20 || u >= 0x7f) return false;
      if (c != '/') continue;
    }
    std::string_view segment = path.substr(segment_start, i - segment_start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    segment_start = i + 1;
  }
  return true;
}

std::string_view WithoutQuery(std::string_view path) {
  // A plain loop: find_first_of looks each character up in the set with a call.
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '?' || path[i] == '#') return path.substr(0, i);
  }
  return path;
}

}  // namespace

std::vector<std::string_view> PathSegments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > pos) out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

Result<std::string> NormalizeRequestPath(std::string_view raw) {
  std::string_view path = WithoutQuery(raw);
  if (IsAlreadyNormal(path)) return std::string(path);
  return internal::NormalizeRequestPathFully(raw);
}

namespace internal {

Result<std::string> NormalizeRequestPathFully(std::string_view raw) {
  std::string_view path = WithoutQuery(raw);
  if (!StartsWith(path, "/")) return Refused(raw, "it must start with \"/\"");
  std::string decoded;
  decoded.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size()) return Refused(raw, "truncated percent-encoding");
      int hi = HexDigitValue(path[i + 1]);
      int lo = HexDigitValue(path[i + 2]);
      if (hi < 0 || lo < 0) return Refused(raw, "invalid percent-encoding");
      decoded += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      decoded += c;
    }
  }
  for (char c : decoded) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '%') return Refused(raw, "it is percent-encoded more than once");
    // A decoded '?' or '#' would start a query or fragment when the path is read again (no
    // name gpupool routes contains one): the normal form must normalise to itself.
    if (c == '?' || c == '#') return Refused(raw, "it contains an encoded '?' or '#'");
    if (c == '\\') return Refused(raw, "it contains a backslash");
    if (u < 0x20 || u == 0x7f) return Refused(raw, "it contains a control character");
  }
  // Path segments become names in replies and in the store, which hold UTF-8 only.
  if (auto bad = FindInvalidUtf8(decoded)) {
    return Refused(raw, "it is not valid UTF-8 once decoded (byte " + bad->ByteText() + ")");
  }
  std::vector<std::string_view> stack;
  for (std::string_view seg : PathSegments(decoded)) {
    if (seg == ".") continue;
    if (seg == "..") {
      if (stack.empty()) return Refused(raw, "it escapes the root with \"..\"");
      stack.pop_back();
      continue;
    }
    stack.push_back(seg);
  }
  std::string out;
  for (std::string_view seg : stack) {
    out += '/';
    out += seg;
  }
  if (out.empty()) out = "/";
  return out;
}

}  // namespace internal

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        // Character class; an unterminated '[' is a literal, as in Python's fnmatch.
        size_t q = p + 1;
        bool negate = q < pattern.size() && (pattern[q] == '!' || pattern[q] == '^');
        if (negate) ++q;
        size_t first = q;
        if (q < pattern.size() && pattern[q] == ']') ++q;
        while (q < pattern.size() && pattern[q] != ']') ++q;
        if (q < pattern.size()) {
          bool in = false;
          for (size_t k = first; k < q; ++k) {
            if (k + 2 < q && pattern[k + 1] == '-') {
              if (text[t] >= pattern[k] && text[t] <= pattern[k + 2]) in = true;
              k += 2;
            } else if (pattern[k] == text[t]) {
              in = true;
            }
          }
          if (in != negate) {
            p = q + 1;
            ++t;
            continue;
          }
        } else if (text[t] == '[') {
          ++p;
          ++t;
          continue;
        }
      } else if (pc == text[t]) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool LegacyPolicyAllows(const std::vector<LegacyAction>& actions, std::string_view method,
                        std::string_view normalized_path) {
  // OSMO stores a policy's actions sorted, so "!" paths are checked first: any matching deny
  // path refuses this policy; otherwise any matching path allows.
  bool allowed = false;
  for (const LegacyAction& a : actions) {
    if (!MethodMatches(a.method, method)) continue;
    bool deny = false;
    std::string_view pattern = LegacyPattern(a.path, &deny);
    if (!GlobMatch(pattern, normalized_path)) continue;
    if (deny) return false;
    allowed = true;
  }
  return allowed;
}

bool ActionMatches(std::string_view pattern, std::string_view action) {
  if (pattern == "*" || pattern == "*:*") return true;
  if (action.empty()) return false;
  if (pattern == action) return true;
  size_t pc = pattern.find(':'), ac = action.find(':');
  if (pc == std::string_view::npos || ac == std::string_view::npos) return false;
  std::string_view ptype = pattern.substr(0, pc), pname = pattern.substr(pc + 1);
  std::string_view atype = action.substr(0, ac), aname = action.substr(ac + 1);
  return (ptype == "*" || ptype == atype) && (pname == "*" || pname == aname);
}

bool ResourceMatches(std::string_view pattern, std::string_view resource) {
  if (pattern == "*" || pattern == resource) return true;
  if (EndsWith(pattern, "*")) {
    return StartsWith(resource, pattern.substr(0, pattern.size() - 1));
  }
  return false;
}

ResolvedAction ResolveAction(std::string_view method, std::string_view normalized_path,
                             std::optional<std::string_view> workflow_pool) {
  std::string m = ToLower(method);
  std::vector<std::string_view> s = PathSegments(normalized_path);
  auto at = [&](size_t i) { return i < s.size() ? s[i] : std::string_view(); };
  if (s.size() == 1 && (s[0] == "healthz" || s[0] == "readyz" || s[0] == "metrics")) {
    return {"system:Health", ""};
  }
  if (at(0) != "api" || s.size() < 2) return {};
  std::string_view area = s[1];
  if (area == "health") return {"system:Health", ""};
  if (area == "version") return {"system:Version", ""};
  if (area == "pool") {
    if (s.size() == 2 && m == "get") return {"pool:List", ""};
    if (s.size() >= 4 && at(3) == "workflow" && m == "post") {
      return {"workflow:Create", "pool/" + std::string(s[2])};
    }
    return {};
  }
  if (area == "queue") {
    // Not a route: what a submission to a queue (a project) is checked as (submit/submit.h).
    if (s.size() == 4 && at(3) == "workflow" && m == "post") {
      return {"workflow:Create", "queue/" + std::string(s[2])};
    }
    return {};
  }
  if (area == "pool_quota" && m == "get") return {"pool:List", ""};
  if (area == "resources" && m == "get") return {"resources:Read", ""};
  if (area == "configs") {
    std::string resource = s.size() >= 3 ? "config/" + ToLower(s[2]) : "";
    if (m == "get") return {"config:Read", resource};
    if ((m == "put" || m == "patch") && s.size() >= 3) return {"config:Update", resource};
    return {};
  }
  if (area == "workflow" || area == "task" || area == "tag") {
    if (s.size() == 2) return m == "get" ? ResolvedAction{"workflow:List", ""} : ResolvedAction{};
    if (area != "workflow")
      return m == "get" ? ResolvedAction{"workflow:Read", "pool/*"} : ResolvedAction{};
    std::string resource =
        "pool/" + (workflow_pool.has_value() ? std::string(*workflow_pool) : std::string("*"));
    std::string_view sub = at(3);
    if (sub == "cancel") return {"workflow:Cancel", resource};
    if (sub == "exec") return {"workflow:Exec", resource};
    if (sub == "portforward") return {"workflow:PortForward", resource};
    if (sub == "rsync") return {"workflow:Rsync", resource};
    if (m == "get") return {"workflow:Read", resource};
    if (m == "put" || m == "patch") return {"workflow:Update", resource};
    if (m == "delete") return {"workflow:Delete", resource};
    return {};
  }
  if (area == "views" && m == "get") {
    // The dashboard's read-only views, as the lists they summarise.
    std::string_view view = at(2);
    if (view == "overview" || view == "pools" || view == "queues") return {"pool:List", ""};
    if (view == "nodes" || view == "machine-pools") return {"resources:Read", ""};
    if (view == "workflows" && s.size() == 3) return {"workflow:List", ""};
    if (view == "workflows" && s.size() == 4) {
      return {"workflow:Read",
              "pool/" + (workflow_pool.has_value() ? std::string(*workflow_pool) : "*")};
    }
    return {};
  }
  if (area == "profile") return {m == "get" ? "profile:Read" : "profile:Update", ""};
  if (area == "auth") {
    if (at(2) == "login") return {"auth:Login", ""};
    if (at(2) == "refresh") return {"auth:Refresh", ""};
    return {"auth:Token", ""};
  }
  if ((area == "users" || area == "user") && m == "get") return {"user:List", ""};
  return {};
}

Status CheckAccess(const std::vector<std::string>& roles, const AccessRequest& request,
                   const ConfigSet& set) {
  ASSIGN_OR_RETURN(std::string path, NormalizeRequestPath(request.path));
  if (std::find(roles.begin(), roles.end(), kAdminRole) != roles.end()) return OkStatus();
  std::vector<std::string> checked = roles;
  if (std::find(checked.begin(), checked.end(), kDefaultRole) == checked.end()) {
    checked.emplace_back(kDefaultRole);
  }
  std::optional<std::string_view> workflow_pool;
  if (request.workflow_pool.has_value()) workflow_pool = *request.workflow_pool;
  ResolvedAction resolved = ResolveAction(request.method, path, workflow_pool);
  Decision d;
  for (const std::string& name : checked) {
    const Role* role = set.FindRole(name);
    if (role == nullptr) continue;
    EvaluateRole(*role, request.method, path, resolved, d);
  }
  if (d.allowed && !d.denied) return OkStatus();
  std::string method;
  for (char c : request.method)
    method += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return PermissionDeniedError(method + " " + path + (d.denied ? " is denied" : " is not allowed") +
                               " for roles " + Join(checked, ", "));
}

Status CheckAccess(const std::vector<std::string>& roles, std::string_view method,
                   std::string_view path, const ConfigSet& set) {
  return CheckAccess(roles, AccessRequest{std::string(method), std::string(path), std::nullopt},
                     set);
}

AccessRequest PoolSubmission(std::string_view pool) {
  return {"POST", "/api/pool/" + std::string(pool) + "/workflow", std::nullopt};
}

AccessRequest QueueSubmission(std::string_view queue) {
  return {"POST", "/api/queue/" + std::string(queue) + "/workflow", std::nullopt};
}

bool PoolAllowed(const std::vector<std::string>& roles, std::string_view pool,
                 const ConfigSet& set) {
  if (!ValidateName("pool", pool).ok()) return false;
  return CheckAccess(roles, PoolSubmission(pool), set).ok();
}

std::vector<std::string> AllowedPools(const std::vector<std::string>& roles, const ConfigSet& set) {
  std::vector<std::string> out;
  for (const auto& [name, pool] : set.pools) {
    if (PoolAllowed(roles, name, set)) out.push_back(name);
  }
  return out;
}

}  // namespace gpupool::config
