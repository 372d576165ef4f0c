// JSON documents (codec::ParseJson, the parser of every JSON config, body and file). A document
// that parses dumps without throwing (DumpCompact byte for byte as dump()), prints as YAML that
// reads back as the same value, is found again by ParseJsonOrYamlDocuments, and has a source
// position for each of its values. A refusal is InvalidArgument naming "<file>:<line>:<col>".

#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/source_map_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto value = codec::ParseJson(text, "f.json");
  if (!value.ok()) {
    CheckInputError(value.status(), "ParseJson", IsValidUtf8(text), "f.json:");
    return 0;
  }
  CheckedDump(*value, "a parsed JSON document");
  CheckYamlRoundTrip(*value, "a parsed JSON document");
  CheckSourceMap(*value, codec::JsonSourceMap::Build(text), text, LineBreaks::kJson);

  auto documents = codec::ParseJsonOrYamlDocuments(text, "f.json");
  const std::string_view body = Trim(text);
  if (!body.empty() && (body.front() == '{' || body.front() == '[')) {
    Check(documents.ok() && documents->size() == 1 && (*documents)[0] == *value,
          "ParseJsonOrYamlDocuments reads a JSON object or array as ParseJson does",
          documents.ok() ? "" : documents.status().ToString());
  }
  return 0;
}
