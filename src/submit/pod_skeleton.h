#pragma once
// A task's pod before and after the templates, and the skeleton that lets tasks of one shape
// share one template render (submit.h, SubmitOptions::reuse_per_resource). Internal to the
// submit module.
//
// A skeleton is the pod built once per (platform, resource, task shape) with sentinel task
// values (name, group, container, image) and the task's lists left empty; InstantiateSkeleton
// copies it, replaces the sentinels in every string and merges the task's lists under the
// template's as the full merge would, so the result is the same pod (submit_test checks).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/quantity.h"
#include "submit/workflow.h"

namespace gpupool::submit {

// Stand-ins for the per-task values while a skeleton is built.
inline constexpr std::string_view kTaskSentinel = "\x01T\x01";
inline constexpr std::string_view kGroupSentinel = "\x01G\x01";
inline constexpr std::string_view kContainerSentinel = "\x01C\x01";
inline constexpr std::string_view kImageSentinel = "\x01I\x01";

struct Skeleton {
  nlohmann::ordered_json pod;
  model::ResourceList requests;
};

// The pod before templates: the user container (image, command, args, env, resources, mounts,
// privileged; a Job's container fields), restartPolicy Never, hostNetwork, volumes and a Job's
// pod fields. With `skeleton`, per-task values are left out: the image is a sentinel and the
// task's lists are empty (present when the task has them, so keys keep their place).
nlohmann::ordered_json BasePod(const TaskSpec& task, const std::string& pod_name,
                               const std::string& container, const model::ResourceList& requests,
                               bool skeleton = false);

// Which optional fields a task has: tasks of one shape (and resource) share a skeleton.
std::string TaskShape(const TaskSpec& task);

// The pod of one task from its skeleton. False when the fast path cannot be exact (the template
// names a container like the task's), and the caller takes the full path.
bool InstantiateSkeleton(const Skeleton& skeleton, const TaskSpec& task, std::string_view group,
                         const std::string& container, nlohmann::ordered_json* out);

}  // namespace gpupool::submit
