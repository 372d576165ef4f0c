#include "submit/pod_skeleton.h"

#include <string>
#include <utility>

#include "config/merge.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

// The task's volumeMounts as the pod has them: a mount with a hostPath gets a hostPath volume of
// its name (appended to `volumes`) and loses the field.
json ExpandMounts(const json& task_mounts, json& volumes) {
  json mounts = json::array();
  for (const json& m : task_mounts) {
    json mount = m;
    if (mount.contains("hostPath")) {
      std::string name = mount.value("name", std::string("mount"));
      volumes.push_back(json{{"name", name}, {"hostPath", json{{"path", mount["hostPath"]}}}});
      mount.erase("hostPath");
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

void ReplaceSentinels(json& j, const TaskSpec& task, std::string_view group,
                      std::string_view container) {
  if (j.is_string()) {
    std::string& s = j.get_ref<std::string&>();
    if (s.find('\x01') == std::string::npos) return;
    ReplaceAll(s, kTaskSentinel, task.name);
    ReplaceAll(s, kGroupSentinel, group);
    ReplaceAll(s, kContainerSentinel, container);
    ReplaceAll(s, kImageSentinel, task.image);
  } else if (j.is_structured()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      ReplaceSentinels(it.value(), task, group, container);
    }
  }
}

// dst's list merged with src's as the template merge does (dst first).
json MergedList(const json& task_list, const json& template_list) {
  json a = json::object();
  a["x"] = task_list;
  json b = json::object();
  b["x"] = template_list;
  config::MergeInto(a, b);
  return std::move(a["x"]);
}

}  // namespace

// The pod before templates. With `skeleton`, per-task values are left out: the image is a
// sentinel and the task's lists are empty (present when the task has them, so keys keep their
// place); InstantiateSkeleton puts them back.
json BasePod(const TaskSpec& task, const std::string& pod_name, const std::string& container,
             const model::ResourceList& requests, bool skeleton) {
  json c = json::object();
  c["name"] = container;
  c["image"] = skeleton ? std::string(kImageSentinel) : task.image;
  if (!task.command.empty()) c["command"] = skeleton ? json::array() : json(task.command);
  if (!task.args.empty()) c["args"] = skeleton ? json::array() : json(task.args);
  if (!task.env.empty()) c["env"] = skeleton ? json::array() : task.env;
  json resources = model::ResourceListToJson(requests);
  c["resources"] = json{{"requests", resources}, {"limits", resources}};
  json volumes = json::array();
  if (!task.volume_mounts.empty() && skeleton) {
    c["volumeMounts"] = json::array();
    for (const json& m : task.volume_mounts) {
      if (m.contains("hostPath")) volumes = json::array({json::object()});
    }
  } else if (!task.volume_mounts.empty()) {
    c["volumeMounts"] = ExpandMounts(task.volume_mounts, volumes);
  }
  if (task.privileged) c["securityContext"] = json{{"privileged", true}};
  // A Job's pod fields (the same for every task of it, so a skeleton keeps them as they are).
  const json no_fields = json::object();
  const json& pod_fields = task.pod_fields.is_object() ? task.pod_fields : no_fields;
  if (auto it = pod_fields.find("container"); it != pod_fields.end()) {
    for (const auto& [key, value] : it->items()) c[key] = value;
  }

  json spec = json::object();
  spec["restartPolicy"] = "Never";
  if (task.host_network) spec["hostNetwork"] = true;
  spec["containers"] = json::array({std::move(c)});
  if (!volumes.empty()) spec["volumes"] = skeleton ? json::array() : std::move(volumes);
  if (auto it = pod_fields.find("spec"); it != pod_fields.end()) {
    for (const auto& [key, value] : it->items()) spec[key] = value;
  }

  json pod = json::object();
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"] = json{{"name", pod_name}};
  pod["spec"] = std::move(spec);
  return pod;
}

// Which optional fields a task has: tasks of one shape share a skeleton.
std::string TaskShape(const TaskSpec& t) {
  std::string shape(6, '0');
  if (!t.command.empty()) shape[0] = '1';
  if (!t.args.empty()) shape[1] = '1';
  if (!t.env.empty()) shape[2] = '1';
  if (!t.volume_mounts.empty()) shape[3] = '1';
  if (t.privileged) shape[4] = '1';
  if (t.host_network) shape[5] = '1';
  for (const json& m : t.volume_mounts) {
    if (m.contains("hostPath")) shape += 'h';
  }
  return shape;
}

// The pod of one task from its skeleton: sentinels replaced, the task's lists merged under the
// template's as the full merge would. False when the fast path cannot be exact (the template
// names a container like the task's), and the caller takes the full path.
bool InstantiateSkeleton(const Skeleton& skeleton, const TaskSpec& task, std::string_view group,
                         const std::string& container, json* out) {
  json pod = skeleton.pod;
  ReplaceSentinels(pod, task, group, container);
  json& containers = pod["spec"]["containers"];
  json* user = nullptr;
  for (json& c : containers) {
    if (c.contains("name") && c["name"] == container) {
      if (user != nullptr) return false;
      user = &c;
    }
  }
  if (user == nullptr) return false;
  auto put = [user](const char* field, const json& value) {
    (*user)[field] = user->contains(field) ? MergedList(value, (*user)[field]) : value;
  };
  if (!task.command.empty()) put("command", json(task.command));
  if (!task.args.empty()) put("args", json(task.args));
  if (!task.env.empty()) put("env", task.env);
  if (!task.volume_mounts.empty()) {
    json volumes = json::array();
    put("volumeMounts", ExpandMounts(task.volume_mounts, volumes));
    if (!volumes.empty()) {
      json& spec = pod["spec"];
      spec["volumes"] =
          spec.contains("volumes") ? MergedList(volumes, spec["volumes"]) : std::move(volumes);
    }
  }
  *out = std::move(pod);
  return true;
}

}  // namespace gpupool::submit
