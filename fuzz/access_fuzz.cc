// Request paths, role path globs and access control (config/access.h): the normaliser every
// request path goes through before routing and access checks (both call it), the glob match of
// legacy role actions, the action and resource patterns of policies, and CheckAccess with the
// built-in roles. The input is up to four lines: METHOD, PATH (as sent, query included), PATTERN
// (a role's path glob, action or resource pattern) and TEXT (what the pattern is matched
// against).
//
// Invariants: a refused path is InvalidArgument; a normalised path starts with '/', holds no
// empty, "." or ".." segment, no '%' escape left and no control character, normalises to itself,
// and the shortcut for already normal paths agrees with the full normaliser; osmo-admin is
// allowed every normalisable path; matching terminates (libFuzzer's timeout catches backtracking
// blow-ups).

#include <string>
#include <vector>

#include "common/strings.h"
#include "config/access.h"
#include "config/config_set.h"
#include "fuzz/support/fuzz_util.h"

namespace gpupool::fuzz {
namespace {

std::vector<std::string_view> Lines(std::string_view text, size_t count) {
  std::vector<std::string_view> lines;
  while (lines.size() + 1 < count) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) break;
    lines.push_back(text.substr(0, newline));
    text.remove_prefix(newline + 1);
  }
  lines.push_back(text);
  lines.resize(count);
  return lines;
}

void CheckNormalPath(std::string_view raw, const std::string& path) {
  Check(StartsWith(path, "/"), "a normalised path starts with '/'", path);
  Check(path == "/" || !EndsWith(path, "/"), "a normalised path has no trailing '/'", path);
  for (std::string_view segment : config::PathSegments(path)) {
    Check(!segment.empty() && segment != "." && segment != "..",
          "a normalised path has no empty, '.' or '..' segment", path);
  }
  for (char c : path) {
    Check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F && c != '\\',
          "a normalised path has no control character or backslash", path);
  }
  auto again = config::NormalizeRequestPath(path);
  Check(
      again.ok() && *again == path, "a normalised path normalises to itself",
      std::string(raw) + " -> " + path + " -> " + (again.ok() ? *again : again.status().message()));
  auto full = config::internal::NormalizeRequestPathFully(raw);
  Check(full.ok() && *full == path, "the normal-path shortcut agrees with the full normaliser",
        std::string(raw) + ": " + path + " vs " + (full.ok() ? *full : full.status().message()));
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  static const config::ConfigSet kBuiltins = config::BuiltinConfigs();
  const std::vector<std::string_view> lines = Lines(AsText(data, size), 4);
  const std::string method(lines[0]);
  const std::string_view raw_path = lines[1];
  const std::string_view pattern = lines[2];
  const std::string_view text = lines[3];

  auto path = config::NormalizeRequestPath(raw_path);
  if (path.ok()) {
    CheckNormalPath(raw_path, *path);
    (void)config::ResolveAction(method, *path, std::string(pattern));
    for (const char* role : {"osmo-user", "osmo-default", "osmo-nobody"}) {
      Status status = config::CheckAccess({role}, method, raw_path, kBuiltins);
      Check(status.ok() || status.code() == StatusCode::kPermissionDenied,
            "access to a normalisable path is granted or denied", status.ToString());
    }
    Status admin = config::CheckAccess({"osmo-admin"}, method, raw_path, kBuiltins);
    Check(admin.ok(), "osmo-admin may do anything", admin.ToString());
    config::LegacyAction action;
    action.path = std::string(pattern);
    action.method = "*";
    (void)config::LegacyPolicyAllows({action}, method, *path);
  } else {
    CheckInputError(path.status(), "NormalizeRequestPath", IsValidUtf8(raw_path));
    Status status = config::CheckAccess({"osmo-admin"}, method, raw_path, kBuiltins);
    Check(status.code() == StatusCode::kInvalidArgument,
          "a refused path is refused by access control too", status.ToString());
  }
  (void)config::GlobMatch(pattern, text);
  (void)config::ActionMatches(pattern, text);
  (void)config::ResourceMatches(pattern, text);
  (void)config::PoolAllowed({"osmo-user"}, text, kBuiltins);
  return 0;
}
