#include "fuzz/support/fuzz_util.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "codec/json_writer.h"
#include "codec/yaml_reader.h"
#include "codec/yaml_writer.h"
#include "common/strings.h"

namespace gpupool::fuzz {
namespace {

// For messages about a value that may not be valid UTF-8.
std::string Printable(const Json& value) {
  return value.dump(-1, ' ', true, Json::error_handler_t::replace);
}

}  // namespace

void Fail(std::string_view invariant, std::string_view detail) {
  std::fprintf(stderr, "broken invariant: %.*s\n", static_cast<int>(invariant.size()),
               invariant.data());
  if (!detail.empty()) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(detail.size()), detail.data());
  }
  std::abort();
}

std::string CheckedDump(const Json& value, std::string_view what) {
  std::string text;
  try {
    text = value.dump();
  } catch (const std::exception& e) {
    Fail(std::string(what) + ": dump() threw", e.what());
  }
  std::string compact;
  try {
    compact = codec::DumpCompact(value);
  } catch (const std::exception& e) {
    Fail(std::string(what) + ": DumpCompact threw where dump() did not", e.what());
  }
  Check(compact == text, std::string(what) + ": DumpCompact differs from dump()",
        "dump():        " + text + "\nDumpCompact(): " + compact);
  return text;
}

void CheckYamlRoundTrip(const Json& value, std::string_view what) {
  const std::string yaml = codec::ToYaml(value);
  auto docs = codec::ParseYamlDocuments(yaml, "round-trip.yaml");
  Check(docs.ok(), std::string(what) + ": ToYaml output does not parse",
        yaml + "\n" + docs.status().ToString());
  // ParseYamlDocuments skips empty documents, and a document that is only `null` with them: a
  // null value (`null`) reads back as no document.
  if (value.is_null()) {
    Check(docs->empty(), std::string(what) + ": ToYaml of null reads back as a document", yaml);
    return;
  }
  Check(docs->size() == 1, std::string(what) + ": ToYaml output is not one document", yaml);
  const Json& back = (*docs)[0].value;
  Check(back == value, std::string(what) + ": ToYaml does not read back as the same value",
        "value: " + Printable(value) + "\nyaml:\n" + yaml + "read back: " + Printable(back));
}

void CheckInputError(const Status& status, std::string_view what, bool input_was_utf8,
                     std::string_view prefix) {
  Check(!status.ok(), std::string(what) + ": an error was expected");
  Check(status.code() == StatusCode::kInvalidArgument,
        std::string(what) + ": bad input must be InvalidArgument", status.ToString());
  Check(!status.message().empty(), std::string(what) + ": empty error message");
  if (input_was_utf8) {
    Check(IsValidUtf8(status.message()),
          std::string(what) + ": error message of UTF-8 input is not UTF-8", status.message());
  }
  if (!prefix.empty()) {
    Check(StartsWith(status.message(), prefix),
          std::string(what) + ": error message does not start with \"" + std::string(prefix) + "\"",
          status.message());
  }
}

}  // namespace gpupool::fuzz
