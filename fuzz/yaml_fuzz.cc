// YAML streams (codec::ParseYamlDocuments: manifests, workflows, scenarios, node lists). Every
// document that parses dumps as JSON without throwing, prints as YAML that reads back as the
// same value, and has a source position for each of its values. A refusal is InvalidArgument
// naming the file.

#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/source_map_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto documents = codec::ParseYamlDocuments(text, "f.yaml");
  if (!documents.ok()) {
    CheckInputError(documents.status(), "ParseYamlDocuments", IsValidUtf8(text), "f.yaml");
    return 0;
  }
  for (const codec::YamlDocument& document : *documents) {
    Check(document.line >= 1, "a document starts on a line", std::to_string(document.line));
    CheckedDump(document.value, "a parsed YAML document");
    CheckYamlRoundTrip(document.value, "a parsed YAML document");
    CheckSourceMap(document.value, document.source_map, text, LineBreaks::kYaml);
  }
  return 0;
}
