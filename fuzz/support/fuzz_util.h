#pragma once
// What every fuzz target shares: the input as text, and the invariants checked on whatever a
// parser returns. A broken invariant prints what broke and aborts, so that libFuzzer saves the
// input as a crash (fuzz/README.md).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpupool::fuzz {

using Json = nlohmann::ordered_json;

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Prints "broken invariant: <invariant>" and `detail`, then aborts.
[[noreturn]] void Fail(std::string_view invariant, std::string_view detail = {});

inline void Check(bool holds, std::string_view invariant, std::string_view detail = {}) {
  if (!holds) Fail(invariant, detail);
}

// A value built from user input goes out as JSON (replies, the store, `-o json`): value.dump()
// must not throw (its strings are valid UTF-8) and DumpCompact must give the same bytes.
// Returns the text.
std::string CheckedDump(const Json& value, std::string_view what);

// ToYaml(value) (`-o yaml`) must read back as the same value.
void CheckYamlRoundTrip(const Json& value, std::string_view what);

// An error a parser gives for bad input: InvalidArgument (kNotFound/kInternal are for files and
// bugs), a message that is not empty, and valid UTF-8 when the input was (errors go into JSON
// replies). `prefix`, when not empty, is what the message must start with (the file name).
void CheckInputError(const Status& status, std::string_view what, bool input_was_utf8,
                     std::string_view prefix = {});

}  // namespace gpupool::fuzz
