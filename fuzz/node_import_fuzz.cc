// Node import (`gpupool node import FILE`, PUT /api/nodes): kubectl NodeList/List/Node as JSON or
// YAML, or the openb node CSV, through model::ParseNodes and then service::Service::ImportNodes
// on a fresh store (which replaces the nodes of the same names and keeps the others).
//
// Invariants: a refusal is InvalidArgument naming the file; imported nodes dump as JSON and
// decode back to themselves; the pool and resource views over them (`pool list`, `resource list`)
// dump as JSON.

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/service_fixture.h"
#include "model/node_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  constexpr char kFile[] = "nodes.yaml";
  const std::string_view text = AsText(data, size);
  const bool utf8 = IsValidUtf8(text);
  auto nodes = model::ParseNodes(text, kFile);
  if (!nodes.ok()) {
    CheckInputError(nodes.status(), "ParseNodes", utf8, kFile);
    return 0;
  }
  for (const model::Node& node : *nodes) {
    const Json json = model::NodeToJson(node);
    CheckedDump(json, "an imported node");
    auto again = model::NodeFromJson(json);
    Check(again.ok(), "an imported node decodes again", again.status().ToString());
  }

  auto fixture = ServiceFixture::Open();
  service::Service& service = fixture->service();
  auto imported = service.ImportNodes(fixture->admin(), text, kFile);
  if (!imported.ok()) {
    // ParseNodes accepted the text: only the store may refuse (e.g. no node at all).
    CheckInputError(imported.status(), "ImportNodes", utf8, kFile);
    return 0;
  }
  Check(imported->imported == static_cast<int>(nodes->size()),
        "ImportNodes imports what ParseNodes reads");
  CheckedDump(service::ToJson(*imported), "node import -o json");
  auto pools = service.ListPools(fixture->admin());
  Check(pools.ok(), "pool list after an import", pools.status().ToString());
  for (const auto& row : *pools) CheckedDump(service::ToJson(row), "pool list -o json");
  auto resources = service.ListResources(fixture->admin(), {});
  Check(resources.ok(), "resource list after an import", resources.status().ToString());
  for (const auto& row : *resources) CheckedDump(service::ToJson(row), "resource list -o json");
  return 0;
}
