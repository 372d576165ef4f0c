#include <algorithm>
#include <cctype>
#include <regex>

#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"

namespace gpupool::config {

// ---- Kinds --------------------------------------------------------------------------------

namespace {

struct KindInfo {
  Kind kind;
  std::string_view name;
  std::string_view manifest;
};

constexpr KindInfo kKinds[] = {
    {Kind::kPool, "POOL", "Pool"},
    {Kind::kPodTemplate, "POD_TEMPLATE", "PodTemplate"},
    {Kind::kResourceValidation, "RESOURCE_VALIDATION", "ResourceValidation"},
    {Kind::kRole, "ROLE", "Role"},
    {Kind::kBackend, "BACKEND", "Backend"},
    {Kind::kNodePool, "NODE_POOL", "NodePool"},
    {Kind::kQueue, "QUEUE", "Queue"},
    {Kind::kMachinePool, "MACHINE_POOL", "MachinePool"},
    {Kind::kPodDisruptionBudget, "POD_DISRUPTION_BUDGET", "PodDisruptionBudget"},
};

// "PodTemplate" / "pod-template" / "pod_template" -> "podtemplate".
std::string Squash(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

std::string_view KindName(Kind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info.name;
  }
  return "UNKNOWN";
}

std::string_view KindManifestName(Kind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info.manifest;
  }
  return "Unknown";
}

std::vector<Kind> AllKinds() {
  std::vector<Kind> out;
  for (const KindInfo& info : kKinds) out.push_back(info.kind);
  return out;
}

Result<Kind> ParseKind(std::string_view text) {
  std::string squashed = Squash(text);
  std::vector<std::string> names;
  for (const KindInfo& info : kKinds) {
    if (Squash(info.name) == squashed) return info.kind;
    names.emplace_back(info.name);
  }
  return InvalidArgumentError("unknown config kind \"" + std::string(text) + "\"" +
                              DidYouMean(text, names) + "; kinds are " + Join(names, ", "));
}

Status ValidateName(std::string_view what, std::string_view name) {
  // ^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$ without std::regex (hot in reference checks).
  bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name.front())) &&
            std::isalnum(static_cast<unsigned char>(name.back())) &&
            std::all_of(name.begin(), name.end(), IsNameChar);
  if (ok) return OkStatus();
  return InvalidArgumentError(std::string(what) + " name \"" + std::string(name) +
                              "\" is not valid: it must start with a letter, end with a letter or "
                              "digit, and contain only letters, digits, '_', '.' and '-'");
}

}  // namespace gpupool::config
