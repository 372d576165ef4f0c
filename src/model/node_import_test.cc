#include "model/node_import.h"

#include <gtest/gtest.h>

#include "model/input_file.h"
#include "model/match.h"

namespace gpupool::model {
namespace node_import_test {

std::string DataPath(const std::string& relative) {
  return std::string(GPUPOOL_SOURCE_DIR) + "/data/" + relative;
}

Result<std::vector<Node>> ImportFile(const std::string& relative) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(DataPath(relative)));
  return ParseNodes(text, relative);
}

const Node* Find(const std::vector<Node>& nodes, const std::string& name) {
  for (const Node& node : nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

TEST(NodeImportTest, RealFiles) {
  struct Case {
    std::string file;
    size_t count;
    std::string node;  // one node to inspect
    std::string label_key;
    std::string label_value;
    std::string cpu;     // allocatable cpu, canonical
    std::string memory;  // allocatable memory, canonical
    int64_t gpus;        // allocatable nvidia.com/gpu (-1 = absent)
  };
  const Case cases[] = {
      {"edgexr-k8s-node-json/aks_cpu_nodes_kubectl_get_nodes.json", 3,
       "aks-agentpool-30520393-vmss000000", "beta.kubernetes.io/instance-type", "Standard_D2s_v3",
       "1900m", "5497568Ki", -1},
      {"edgexr-k8s-node-json/vgpu_a16_node_kubectl_get_nodes.json", 1, "nori",
       "nvidia.com/gpu.product", "NVIDIA-A16-4Q", "2", "16367668Ki", 1},
      {"runai-fake-gpu-operator-samples/nodes/t4x2_fraction_1_workload.yaml", 1,
       "qa-mig-worker-gpu-1", "nvidia.com/gpu.product", "Tesla-T4", "32", "123560520Ki", 2},
      {"runai-fake-gpu-operator-samples/nodes/a100-40gb_mig_7g-40gb.yaml", 1,
       "qa-mig-worker-gpu-a100", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB", "", "", 0},
      {"runai-fake-gpu-operator-samples/nodes/a100-40gb_mig_3_instances.yaml", 1,
       "qa-mig-worker-gpu-a100", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB", "", "", 0},
      {"runai-fake-gpu-operator-samples/nodes/a100-40gb_mig_4_instances.yaml", 1,
       "qa-mig-worker-gpu-a100", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB", "", "", 0},
      {"alibaba-gpu-v2023-openb/node_yaml/openb_node_list_gpu_node.yaml", 1213, "openb-node-0000",
       "alibabacloud.com/gpu-card-model", "P100", "64", "256Gi", -1},
      {"alibaba-gpu-v2023-openb/openb_node_list_all_node.csv", 1523, "openb-node-1522",
       "nvidia.com/gpu.product", "NVIDIA-G2", "96", "384Gi", 8},
      {"alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv", 1213, "openb-node-0243",
       "nvidia.com/gpu.product", "NVIDIA-G2", "96", "384Gi", 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto nodes = ImportFile(c.file);
    ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
    EXPECT_EQ(nodes->size(), c.count);
    const Node* node = Find(*nodes, c.node);
    ASSERT_NE(node, nullptr);
    ASSERT_TRUE(node->labels.count(c.label_key)) << c.label_key;
    EXPECT_EQ(node->labels.at(c.label_key), c.label_value);
    if (!c.cpu.empty()) {
      EXPECT_EQ(node->allocatable.at("cpu").ToString(), c.cpu);
    }
    if (!c.memory.empty()) {
      EXPECT_EQ(node->allocatable.at("memory").ToString(), c.memory);
    }
    if (c.gpus < 0) {
      EXPECT_EQ(node->allocatable.count("nvidia.com/gpu"), 0u);
    } else {
      ASSERT_EQ(node->allocatable.count("nvidia.com/gpu"), 1u);
      EXPECT_EQ(node->allocatable.at("nvidia.com/gpu").Value(), c.gpus);
    }
    // Every imported node prints back to a Node that reads the same.
    for (const Node& n : *nodes) {
      auto again = NodeFromJson(NodeToJson(n));
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(again->name, n.name);
      EXPECT_EQ(again->labels, n.labels);
      EXPECT_EQ(again->taints, n.taints);
      EXPECT_EQ(again->allocatable, n.allocatable);
    }
  }
}

TEST(NodeImportTest, OpenbCsvNodes) {
  auto nodes = ImportFile("alibaba-gpu-v2023-openb/openb_node_list_all_node.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  const Node* cpu_node = Find(*nodes, "openb-node-0000");
  ASSERT_NE(cpu_node, nullptr);
  EXPECT_EQ(cpu_node->labels, (Labels{{"gpupool.io/source", "openb"},
                                      {"kubernetes.io/hostname", "openb-node-0000"}}));
  EXPECT_EQ(cpu_node->allocatable.at("cpu").MilliValue(), 32000);
  EXPECT_EQ(cpu_node->allocatable.at("memory").Value(), int64_t{262144} * 1024 * 1024);
  EXPECT_EQ(cpu_node->allocatable.at("pods").Value(), 110);
  EXPECT_EQ(cpu_node->allocatable.count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(cpu_node->capacity, cpu_node->allocatable);

  const Node* v100 = Find(*nodes, "openb-node-0233");
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(v100->labels.at("nvidia.com/gpu.product"), "NVIDIA-V100M16");
  EXPECT_EQ(v100->labels.at("nvidia.com/gpu.count"), "4");

  // Counts by model, as the trace README gives them.
  std::map<std::string, int> by_model;
  int64_t total_gpus = 0;
  for (const Node& node : *nodes) {
    auto it = node.labels.find("nvidia.com/gpu.product");
    by_model[it == node.labels.end() ? "" : it->second]++;
    auto gpu = node.allocatable.find("nvidia.com/gpu");
    if (gpu != node.allocatable.end()) total_gpus += gpu->second.Value();
  }
  EXPECT_EQ(by_model[""], 310);
  EXPECT_EQ(by_model["NVIDIA-G2"], 549);
  EXPECT_EQ(by_model["NVIDIA-T4"], 404);
  EXPECT_EQ(by_model["NVIDIA-P100"], 134);
  EXPECT_EQ(by_model["NVIDIA-A10"], 2);

  // The imported nodes work with the matcher.
  Labels selector = {{"nvidia.com/gpu.product", "NVIDIA-T4"}};
  int t4 = 0;
  for (const Node& node : *nodes) t4 += MatchesNodeSelector(selector, node) ? 1 : 0;
  EXPECT_EQ(t4, 404);
  EXPECT_GT(total_gpus, 0);
}

TEST(NodeImportTest, InlineFormats) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> names;
  };
  const Case cases[] = {
      {"single json node",
       R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}})",
       {"a"}},
      {"json NodeList",
       R"({"kind": "NodeList", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]})",
       {"a", "b"}},
      {"List skips other kinds",
       R"({"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}},
           {"kind": "Node", "metadata": {"name": "a"}}]})",
       {"a"}},
      {"json array", R"([{"kind": "Node", "metadata": {"name": "a"}}])", {"a"}},
      {"multi-document yaml",
       "kind: Node\nmetadata:\n  name: a\n---\nkind: NodeList\nitems:\n- metadata:\n    name: b\n",
       {"a", "b"}},
      {"yaml with comments", "# nodes\n---\nkind: Node\nmetadata: {name: a}\n", {"a"}},
      {"empty NodeList", R"({"kind": "NodeList", "items": []})", {}},
      {"csv without model column tail",
       "sn,cpu_milli,memory_mib,gpu,model\nx,1000,1024,0\n",
       {"x"}},
      {"csv with blank lines",
       "sn,cpu_milli,memory_mib,gpu,model\n\nx,1000,1024,1,A100\n\n",
       {"x"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto nodes = ParseNodes(c.text, "in");
    ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
    std::vector<std::string> names;
    for (const Node& n : *nodes) names.push_back(n.name);
    EXPECT_EQ(names, c.names);
  }
}

TEST(NodeImportTest, Errors) {
  struct Case {
    std::string name;
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"malformed json", "{\"kind\": \"Node\",\n \"metadata\": {\"name\": \"a\"]}",
       "nodes.json:2:26: "},
      {"wrong kind", "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}}",
       "nodes.json:1:2: expected kind Node, NodeList or List, got Pod"},
      {"NodeList item of another kind",
       R"({"kind": "NodeList", "items": [{"kind": "Pod", "metadata": {"name": "a"}}]})",
       "nodes.json:1:33: items[0]: expected kind Node, got Pod"},
      {"bad item",
       R"({"kind": "NodeList", "items": [{"metadata": {"name": "a"}}, {"metadata": {}}]})",
       "nodes.json:1:62: items[1]: metadata.name: required"},
      {"yaml document line",
       "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata:\n  name: b\n  labels: {x: "
       "[1]}\n",
       "nodes.json:7:12: node \"b\": metadata.labels.x: expected a string, got array"},
      {"negative quantity",
       "kind: Node\nmetadata: {name: a}\nstatus:\n  allocatable: {cpu: \"8\", nvidia.com/gpu: "
       "\"-8\"}\n",
       "nodes.json:4:27: node \"a\": status.allocatable.nvidia.com/gpu: must not be negative, got "
       "\"-8\""},
      {"a JSON array item's field",
       "[{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n {\"kind\": \"Node\", "
       "\"metadata\": {\"name\": \"b\"},\n  \"status\": {\"capacity\": {\"memory\": null}}}]",
       "nodes.json:3:27: node \"b\": status.capacity.memory: expected a quantity (string or "
       "number), got null"},
      {"duplicate", "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n",
       "duplicate node \"a\""},
      {"not a node", "a: 1\n", "not a Kubernetes Node"},
      {"scalar document", "hello\n", "expected a Node, NodeList or List object, got string"},
      {"csv bad number", "sn,cpu_milli,memory_mib,gpu,model\nx,lots,1024,0,\n",
       "nodes.json:2: column cpu_milli: expected a non-negative integer, got \"lots\""},
      {"csv negative", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1024,-1,\n",
       "nodes.json:2: column gpu"},
      {"csv short row", "sn,cpu_milli,memory_mib,gpu,model\nx,1\n",
       "nodes.json:2: expected 5 columns, got 2"},
      {"csv duplicate", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,0,\nx,1,1,0,\n",
       "nodes.json:3: duplicate node \"x\""},
      {"csv bad header", "sn,cpu,memory\n", "nodes.json:1: expected the header"},
      // Once parsed and written back as JSON, such a name made the writer throw (found by fuzzing).
      {"csv not utf-8", "sn,cpu_milli,memory_mib,gpu,model\nok,1,1,0,\nn\xff\xfe,1,1,0,\n",
       "nodes.json:3:2: not valid UTF-8 (byte 0xff)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto nodes = ParseNodes(c.text, "nodes.json");
    ASSERT_FALSE(nodes.ok());
    EXPECT_EQ(nodes.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(nodes.status().message().find(c.message), std::string::npos)
        << nodes.status().message();
  }
}

}  // namespace node_import_test
}  // namespace gpupool::model
