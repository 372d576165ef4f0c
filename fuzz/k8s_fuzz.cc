// Kubernetes scheduling fields (model/k8s.h, model/match.h, config/membership.h): node label
// selectors, node affinity, taints and tolerations. The input is a YAML stream (or JSON): each
// `kind: Node` document is a node, any other document a pod (or a pod template). Every pod is
// matched against every node, as the scheduler and platform membership do.
//
// Invariants: decoding and validation refuse with InvalidArgument; what decodes prints and
// decodes back to the same value (nodes, affinity, tolerations, taints in kubectl syntax);
// matching never crashes.

#include <vector>

#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "config/membership.h"
#include "fuzz/support/fuzz_util.h"
#include "model/k8s.h"
#include "model/match.h"

namespace gpupool::fuzz {
namespace {

constexpr size_t kMaxObjects = 16;  // pods x nodes matches per input

void CheckNodeRoundTrip(const model::Node& node) {
  const Json json = model::NodeToJson(node);
  CheckedDump(json, "NodeToJson");
  auto again = model::NodeFromJson(json);
  Check(again.ok(), "NodeToJson decodes again", again.status().ToString());
  Check(again->name == node.name && again->labels == node.labels &&
            again->annotations == node.annotations && again->taints == node.taints &&
            again->capacity == node.capacity && again->allocatable == node.allocatable &&
            again->unschedulable == node.unschedulable,
        "a node decodes back to the same node", json.dump());
  for (const model::Taint& taint : node.taints) {
    CheckedDump(model::TaintToJson(taint), "TaintToJson");
    auto parsed = model::ParseTaintSpec(taint.ToString());
    if (parsed.ok()) {
      Check(*parsed == taint, "a taint's kubectl form parses to the same taint", taint.ToString());
    }
  }
}

void CheckPodRoundTrip(const model::PodScheduling& pod) {
  const Json affinity = model::NodeAffinityToJson(pod.affinity);
  CheckedDump(affinity, "NodeAffinityToJson");
  auto again = model::NodeAffinityFromJson(affinity, "affinity");
  Check(again.ok() && *again == pod.affinity, "node affinity decodes back to the same value",
        affinity.dump() + " " + again.status().ToString());
  for (const model::Toleration& toleration : pod.tolerations) {
    const Json json = model::TolerationToJson(toleration);
    CheckedDump(json, "TolerationToJson");
    auto parsed = model::TolerationFromJson(json, "toleration");
    Check(parsed.ok() && *parsed == toleration, "a toleration decodes back to the same value",
          json.dump() + " " + parsed.status().ToString());
  }
  for (const auto& [resource, quantity] : pod.requests) (void)quantity.ToString();
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto documents = codec::ParseJsonOrYamlDocuments(text, "objects.yaml");
  if (!documents.ok()) return 0;

  std::vector<model::Node> nodes;
  std::vector<model::PodScheduling> pods;
  std::vector<config::PlatformSelector> selectors;
  for (const Json& document : *documents) {
    if (nodes.size() + pods.size() >= kMaxObjects) break;
    if (document.is_object() && document.value("kind", Json()) == "Node") {
      auto node = model::NodeFromJson(document);
      if (!node.ok()) {
        CheckInputError(node.status(), "NodeFromJson", true);
        continue;
      }
      CheckNodeRoundTrip(*node);
      nodes.push_back(std::move(*node));
      continue;
    }
    if (auto selector = config::SelectorFromTemplate(document); selector.ok()) {
      selectors.push_back(std::move(*selector));
    } else {
      CheckInputError(selector.status(), "SelectorFromTemplate", true);
    }
    auto pod = model::PodSchedulingFromJson(document);
    if (!pod.ok()) {
      CheckInputError(pod.status(), "PodSchedulingFromJson", true);
      continue;
    }
    CheckPodRoundTrip(*pod);
    if (Status valid = model::ValidatePodScheduling(*pod); !valid.ok()) {
      CheckInputError(valid, "ValidatePodScheduling", true, "spec.");
    }
    pods.push_back(std::move(*pod));
  }
  for (const model::Node& node : nodes) {
    for (const model::PodScheduling& pod : pods) {
      (void)model::MatchesNodeSelectorAndAffinity(pod, node);
      (void)model::PreferredAffinityScore(pod.affinity, node);
      (void)model::FindUntoleratedTaint(node.taints, pod.tolerations);
      (void)model::CountIntolerablePreferNoSchedule(node.taints, pod.tolerations);
    }
    for (const config::PlatformSelector& selector : selectors) {
      (void)config::NodeMatchesSelector(selector, node);
    }
  }
  return 0;
}
