// Writes a large cluster into a store for the dashboard's benchmark (scripts/bench-dashboard.sh):
// N nodes of five GPU products in three node pools, and M workflows of the built-in default pool
// with one task each: R running on nodes (GPU tasks fill the GPU nodes first), P pending (asking
// for more GPUs than a node has, so they stay pending), the rest finished (completed, one in ten
// failed). Workflows are written with the store's own calls, so the data is what `gpupool serve`
// would have left.
//
//   gpupool-dashboard-data --db sqlite:/tmp/big.db --nodes 10000 --workflows 100000
//                          --running 6000 --pending 4000
#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "model/task_state.h"
#include "service/service.h"
#include "store/store.h"

namespace {

using Json = nlohmann::ordered_json;
namespace model = gpupool::model;
using gpupool::store::NodeRecord;
using gpupool::store::TaskRecord;
using gpupool::store::WorkflowRecord;

struct Product {
  const char* name;
  int gpus;
  const char* node_pool;  // value of label node-pool
};
constexpr Product kProducts[] = {{"NVIDIA-H100-80GB-HBM3", 8, "h100"},
                                 {"NVIDIA-A100-SXM4-80GB", 8, "a100"},
                                 {"NVIDIA-L40S", 4, "l40s"},
                                 {"Tesla-T4", 2, "l40s"},
                                 {"", 0, ""}};

NodeRecord MakeNode(int i) {
  const Product& p = kProducts[i % 5];
  const std::string name = "node-" + std::to_string(100000 + i).substr(1);
  Json labels = {{"kubernetes.io/hostname", name},
                 {"topology.kubernetes.io/zone", i % 3 ? "a" : "b"}};
  Json allocatable = {
      {"cpu", "64"}, {"memory", "512Gi"}, {"ephemeral-storage", "2Ti"}, {"pods", "110"}};
  if (p.gpus > 0) {
    labels["nvidia.com/gpu.product"] = p.name;
    labels["node-pool"] = p.node_pool;
    allocatable["nvidia.com/gpu"] = std::to_string(p.gpus);
  }
  Json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", name}, {"labels", labels}}},
               {"status", {{"capacity", allocatable}, {"allocatable", allocatable}}}};
  return {name, node};
}

Json Pod(const std::string& id, int gpus) {
  Json requests = {{"cpu", "1"}, {"memory", "4Gi"}};
  if (gpus > 0) requests["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", id + "-train"},
            {"labels",
             {{"gpupool.io/workflow", id},
              {"gpupool.io/pool", "default"},
              {"gpupool.io/queue", "default"},
              {"gpupool.io/platform", "default"},
              {"gpupool.io/gang", id + ".g"},
              {"gpupool.io/gang-min", "1"}}},
            {"annotations", {{"gpupool.io/sim-duration-seconds", "86400"}}}}},
          {"spec",
           {{"priorityClassName", "normal"},
            {"containers",
             {{{"name", "train"},
               {"image", "pytorch"},
               {"resources", {{"requests", requests}, {"limits", requests}}}}}}}}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gpupool-dashboard-data: a large cluster in a store, for the dashboard benchmark");
  std::string db;
  int nodes = 10000, workflows = 100000, running = 6000, pending = 4000;
  app.add_option("--db", db, "store URL")->required();
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--workflows", workflows)->capture_default_str();
  app.add_option("--running", running)->capture_default_str();
  app.add_option("--pending", pending)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  gpupool::SystemClock clock;
  auto store = gpupool::store::OpenStore(db, {.clock = &clock});
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
  gpupool::service::Service service(**store, clock);
  if (auto s = service.EnsureBuiltins(); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  std::vector<NodeRecord> node_records;
  for (int i = 0; i < nodes; ++i) node_records.push_back(MakeNode(i));
  if (auto s = (*store)->UpsertNodes(node_records, /*replace_all=*/true); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  // GPU slots to bind running tasks to: one GPU each, node by node.
  std::vector<std::string> slots;
  for (int i = 0; i < nodes && static_cast<int>(slots.size()) < running; ++i) {
    for (int g = 0; g < kProducts[i % 5].gpus; ++g) slots.push_back(node_records[i].name);
  }
  const int64_t now = clock.NowMillis();
  // Sixteen writers, so that the store's group commit writes many workflows per transaction.
  constexpr int kWriters = 16;
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  auto write = [&] {
    for (int w = next++; w < workflows && !failed; w = next++) {
      WorkflowRecord workflow;
      workflow.id = "bench-" + std::to_string(w + 1);
      workflow.name = "bench";
      workflow.pool = "default";
      workflow.user = "user-" + std::to_string(w % 50);
      workflow.submitted_ms = now - (workflows - w) * 1000LL;
      workflow.spec = {{"workflow", {{"name", "bench"}}}};
      TaskRecord task;
      task.group = "g";
      task.name = "train";
      const int finished = workflows - running - pending;
      if (w < finished) {
        task.status =
            ToString(w % 10 == 0 ? model::TaskStatus::kFailed : model::TaskStatus::kCompleted);
        task.message = w % 10 == 0 ? "exit code 1" : "";
        task.exit_code = w % 10 == 0 ? 1 : 0;
        task.started_ms = workflow.submitted_ms + 1000;
        task.finished_ms = workflow.submitted_ms + 60000;
        task.pod = Pod(workflow.id, 0);
      } else if (w < finished + running && w - finished < static_cast<int>(slots.size())) {
        task.status = ToString(model::TaskStatus::kRunning);
        task.node = slots[w - finished];
        task.started_ms = workflow.submitted_ms + 1000;
        task.pod = Pod(workflow.id, 1);
      } else {
        // More GPUs than any node has: the pending tasks stay pending, as on a full cluster, so
        // the pages show pending work with its reason (one GPU each would be placed at once).
        task.status = ToString(model::TaskStatus::kPending);
        task.pod = Pod(workflow.id, 16);
      }
      task.status_changed_ms = workflow.submitted_ms;
      workflow.status = task.status;
      workflow.tasks = {task};
      if (auto created = (*store)->CreateWorkflow(workflow); !created.ok()) {
        std::cerr << created.status().ToString() << "\n";
        failed = true;
      }
    }
  };
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) writers.emplace_back(write);
  for (auto& writer : writers) writer.join();
  if (failed) return 1;
  std::cout << "wrote " << nodes << " nodes and " << workflows << " workflows (" << running
            << " running, " << pending << " pending) to " << db << "\n";
  return 0;
}
