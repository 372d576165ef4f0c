// The submission pipeline in process (dry run): a pool with 3 pod templates (default_user,
// default_ctrl, a platform template) and 4 validation sets (default_cpu, default_memory,
// default_storage, a GPU limit set), 32 nodes. Reports tasks per second.
//
//   cmake --build build --target gpupool_submit_bench
//   taskset -c 0 build/bench/gpupool_submit_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "config/config_set.h"
#include "model/k8s.h"
#include "submit/submit.h"
#include "submit/workflow.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;

config::ConfigSet BenchConfigs() {
  config::ConfigSet set = config::BuiltinConfigs();
  auto put = [&set](config::Kind kind, const std::string& name, const char* body) {
    Status s = config::PutConfig(set, kind, name, json::parse(body));
    if (!s.ok()) std::abort();
  };
  put(config::Kind::kPodTemplate, "h100", R"({"spec": {
      "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})");
  put(config::Kind::kResourceValidation, "gpu_limits", R"([
      {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "8",
       "assert_message": "At most 8 GPUs, got {{USER_GPU}}"},
      {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "{{K8_GPU}}",
       "assert_message": "{{USER_GPU}} GPUs but the node has {{K8_GPU}}"}])");
  put(config::Kind::kPool, "bench", R"({
      "backend": "default", "default_platform": "h100",
      "common_default_variables": {"USER_CPU": 8, "USER_GPU": 1, "USER_MEMORY": "64Gi",
                                   "USER_STORAGE": "100Gi"},
      "common_resource_validations": ["default_cpu", "default_memory", "default_storage",
                                      "gpu_limits"],
      "common_pod_template": ["default_user", "default_ctrl"],
      "platforms": {"h100": {"override_pod_template": ["h100"]}}})");
  return set;
}

std::vector<model::Node> BenchNodes() {
  std::vector<model::Node> nodes;
  for (int i = 0; i < 32; ++i) {
    json n = json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "kubernetes.io/arch": "amd64"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "192", "memory": "2048Gi",
                   "ephemeral-storage": "7Ti", "nvidia.com/gpu": "8", "pods": "110"}}})");
    n["metadata"]["name"] = "h100-" + std::to_string(i);
    nodes.push_back(*model::NodeFromJson(n));
  }
  return nodes;
}

// `tasks` tasks in one group; with distinct_resources each task has its own resource spec, so
// no validation result is reused.
std::string WorkflowText(int tasks, bool distinct_resources) {
  std::string text = "workflow:\n  name: bench\n  resources:\n";
  int resources = distinct_resources ? tasks : 1;
  for (int r = 0; r < resources; ++r) {
    text += "    r" + std::to_string(r) + ": {cpu: " + std::to_string(1 + r % 16) +
            ", gpu: " + std::to_string(1 + r % 8) + ", memory: 32Gi, storage: 50Gi}\n";
  }
  text += "  groups:\n  - name: g\n    tasks:\n";
  for (int t = 0; t < tasks; ++t) {
    text += "    - {name: t" + std::to_string(t) + ", image: \"nvcr.io/nvidia/pytorch:24.08\"," +
            " command: [python, train.py], resource: r" +
            std::to_string(distinct_resources ? t : 0) + "}\n";
  }
  return text;
}

void RunSubmit(benchmark::State& state, bool distinct_resources) {
  const config::ConfigSet configs = BenchConfigs();
  const std::vector<model::Node> nodes = BenchNodes();
  const int tasks = static_cast<int>(state.range(0));
  auto workflow = ParseWorkflow(WorkflowText(tasks, distinct_resources), "bench.yaml");
  if (!workflow.ok()) {
    state.SkipWithError(workflow.status().message().c_str());
    return;
  }
  const SubmitCaller caller{"bench", {"osmo-admin"}};
  for (auto _ : state) {
    auto plan = Submit(configs, nodes, caller, "bench", *workflow, SubmitOptions{"bench-1"});
    if (!plan.ok()) {
      state.SkipWithError(plan.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(plan->tasks.data());
  }
  state.SetItemsProcessed(state.iterations() * tasks);
  state.counters["tasks/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tasks),
                                                 benchmark::Counter::kIsRate);
}

void BM_SubmitSharedResource(benchmark::State& state) { RunSubmit(state, false); }
void BM_SubmitDistinctResources(benchmark::State& state) { RunSubmit(state, true); }

void BM_ParseWorkflow(benchmark::State& state) {
  const int tasks = static_cast<int>(state.range(0));
  const std::string text = WorkflowText(tasks, false);
  for (auto _ : state) {
    auto wf = ParseWorkflow(text, "bench.yaml");
    benchmark::DoNotOptimize(wf);
  }
  state.SetItemsProcessed(state.iterations() * tasks);
}

// The one-task workflow that scripts/bench-http.sh submits (what one HTTP submission parses).
void BM_ParseWorkflowOneTask(benchmark::State& state) {
  const std::string text = R"(workflow:
  name: bench
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1h}
)";
  for (auto _ : state) {
    auto wf = ParseWorkflow(text, "request body");
    if (!wf.ok()) {
      state.SkipWithError(wf.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(wf);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_SubmitSharedResource)->Arg(1)->Arg(16)->Arg(256);
BENCHMARK(BM_SubmitDistinctResources)->Arg(16)->Arg(256);
BENCHMARK(BM_ParseWorkflow)->Arg(256);
BENCHMARK(BM_ParseWorkflowOneTask);

}  // namespace
}  // namespace gpupool::submit

BENCHMARK_MAIN();
