// JSON documents (model::ParseJson, the parser of every JSON config, body and file). A document
// that parses dumps without throwing (DumpCompact byte for byte as dump()), prints as YAML that
// reads back as the same value, is found again by ParseJsonOrYamlDocuments, and has a source
// position for each of its values. A refusal is InvalidArgument naming "<file>:<line>:<col>".

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/source_map_check.h"
#include "model/json_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto value = model::ParseJson(text, "f.json");
  if (!value.ok()) {
    CheckInputError(value.status(), "ParseJson", IsValidUtf8(text), "f.json:");
    return 0;
  }
  CheckedDump(*value, "a parsed JSON document");
  CheckYamlRoundTrip(*value, "a parsed JSON document");
  CheckSourceMap(*value, model::JsonSourceMap::Build(text), text, LineBreaks::kJson);

  auto documents = model::ParseJsonOrYamlDocuments(text, "f.json");
  const std::string_view body = Trim(text);
  if (!body.empty() && (body.front() == '{' || body.front() == '[')) {
    Check(documents.ok() && documents->size() == 1 && (*documents)[0] == *value,
          "ParseJsonOrYamlDocuments reads a JSON object or array as ParseJson does",
          documents.ok() ? "" : documents.status().ToString());
  }
  return 0;
}
