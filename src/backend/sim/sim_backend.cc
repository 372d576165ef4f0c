#include "backend/sim/sim_backend.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codec/yaml_reader.h"
#include "common/strings.h"

namespace gpupool::backend {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

void CollectNodes(const Json& doc, std::vector<Json>& out) {
  if (!doc.is_object()) return;
  std::string kind = doc.value("kind", "");
  if (kind == "Node") {
    out.push_back(doc);
  } else if ((kind == "List" || kind == "NodeList") && doc.contains("items") &&
             doc["items"].is_array()) {
    for (const auto& item : doc["items"]) CollectNodes(item, out);
  }
}

Status LoadFile(const fs::path& path, std::vector<Json>& out) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read cluster file " + path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (path.extension() != ".json") {
    // The model's YAML reader: the same typing, guards and "<file>:<line>:<column>: " errors as
    // the configs and workflows that name these nodes.
    ASSIGN_OR_RETURN(auto docs, codec::ParseYamlDocuments(text, path.string()));
    for (const auto& doc : docs) CollectNodes(doc.value, out);
    return OkStatus();
  }
  try {
    CollectNodes(Json::parse(text), out);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(path.string() + ": " + e.what());
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<Json>> LoadClusterNodes(const std::string& path) {
  std::vector<Json> nodes;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      auto ext = entry.path().extension();
      if (ext == ".json" || ext == ".yaml" || ext == ".yml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) RETURN_IF_ERROR(LoadFile(file, nodes));
  } else {
    RETURN_IF_ERROR(LoadFile(path, nodes));
  }
  for (const auto& node : nodes) {
    if (!node.contains("metadata") || !node["metadata"].contains("name") ||
        !node["metadata"]["name"].is_string()) {
      return InvalidArgumentError(path + ": a Node without metadata.name");
    }
  }
  return nodes;
}

SimBackend::SimBackend(std::vector<Json> nodes) : nodes_(std::move(nodes)) {
  for (const auto& node : nodes_) node_names_.insert(node["metadata"]["name"].get<std::string>());
}

Result<std::vector<Json>> SimBackend::ListNodes() const { return nodes_; }

Status SimBackend::Launch(const TaskLaunch& launch) {
  if (!node_names_.contains(launch.node) && !known_nodes_.contains(launch.node)) {
    return InvalidArgumentError("sim backend: unknown node \"" + launch.node + "\" for task " +
                                launch.key);
  }
  if (launch.duration_ms < 0) {
    return InvalidArgumentError("sim backend: negative sim_duration for task " + launch.key);
  }
  std::lock_guard lock(mu_);
  running_.try_emplace(launch.key, launch);
  return OkStatus();
}

void SimBackend::SetKnownNodes(const std::vector<std::string>& names) {
  known_nodes_ = std::set<std::string, std::less<>>(names.begin(), names.end());
}

Status SimBackend::Kill(std::string_view key) {
  std::lock_guard lock(mu_);
  auto it = running_.find(key);
  if (it != running_.end()) running_.erase(it);
  return OkStatus();
}

std::vector<TaskExit> SimBackend::Poll(int64_t now_ms) {
  std::vector<TaskExit> exits;
  std::lock_guard lock(mu_);
  for (auto it = running_.begin(); it != running_.end();) {
    int64_t end_ms = it->second.start_ms + it->second.duration_ms;
    if (end_ms <= now_ms) {
      exits.push_back({it->first, it->second.exit_code, end_ms});
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  std::stable_sort(exits.begin(), exits.end(), [](const TaskExit& a, const TaskExit& b) {
    return a.finished_ms < b.finished_ms;
  });
  return exits;
}

size_t SimBackend::RunningCount() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

}  // namespace gpupool::backend
