#include "kube/writes.h"

#include <algorithm>

#include "common/json_text.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

Json PodCondition(const char* type, const char* status, const std::string& reason,
                  const std::string& message, const std::string& now) {
  return {{"type", type},       {"status", status},         {"reason", reason},
          {"message", message}, {"lastProbeTime", nullptr}, {"lastTransitionTime", now}};
}

// `text` as a JSON string, as DumpJson writes it. Names and UIDs need no escape: those are
// written as they are, without the tree and the dump (a binding per pod, thousands a second).
std::string Quoted(const std::string& text) {
  bool plain = std::all_of(text.begin(), text.end(),
                           [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  return plain ? '"' + text + '"' : DumpJson(Json(text));
}

}  // namespace

std::string MetadataString(const Json& object, const char* field) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto it = metadata->find(field);
  return it != metadata->end() && it->is_string() ? it->get<std::string>() : "";
}

ObjectRef RefOf(const Json& object) {
  std::string ns = MetadataString(object, "namespace");
  return {ns.empty() ? "default" : ns, MetadataString(object, "name"),
          MetadataString(object, "uid")};
}

std::string PodPath(const ObjectRef& pod, std::string_view subresource) {
  std::string path = "/api/v1/namespaces/" + pod.namespace_ + "/pods/" + pod.name;
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

Json BindingBody(const ObjectRef& pod, const std::string& node) {
  Json metadata = {{"name", pod.name}, {"namespace", pod.namespace_}};
  if (!pod.uid.empty()) metadata["uid"] = pod.uid;
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", metadata},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

std::string BindingText(const ObjectRef& pod, const std::string& node) {
  std::string text = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)";
  text += Quoted(pod.name);
  text += R"(,"namespace":)";
  text += Quoted(pod.namespace_);
  if (!pod.uid.empty()) {
    text += R"(,"uid":)";
    text += Quoted(pod.uid);
  }
  text += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)";
  text += Quoted(node);
  text += "}}";
  return text;
}

Json UnschedulablePatch(const std::string& message, const std::string& now) {
  return {{"status",
           {{"conditions", Json::array({PodCondition("PodScheduled", "False", "Unschedulable",
                                                     message, now)})}}}};
}

Json DisruptionTargetPatch(const std::string& reason, const std::string& message,
                           const std::string& now) {
  return {{"status",
           {{"conditions",
             Json::array({PodCondition("DisruptionTarget", "True", reason, message, now)})}}}};
}

Json DisruptionTargetClearedPatch(const std::string& message, const std::string& now) {
  Json condition = PodCondition("DisruptionTarget", "False", "", message, now);
  condition["reason"] = nullptr;  // a strategic merge removes the eviction's reason
  return {{"status", {{"conditions", Json::array({condition})}}}};
}

Json DeleteOptionsBody(const ObjectRef& pod, std::optional<int64_t> grace_seconds) {
  Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!pod.uid.empty()) options["preconditions"] = {{"uid", pod.uid}};
  if (grace_seconds) options["gracePeriodSeconds"] = *grace_seconds;
  return options;
}

Json EvictionBody(const ObjectRef& pod, std::optional<int64_t> grace_seconds) {
  Json delete_options = DeleteOptionsBody(pod, grace_seconds);
  delete_options.erase("apiVersion");
  delete_options.erase("kind");
  return {{"apiVersion", "policy/v1"},
          {"kind", "Eviction"},
          {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_}}},
          {"deleteOptions", delete_options}};
}

}  // namespace gpupool::kube
