#pragma once
// Every JSON text the process writes (HTTP replies, bodies stored in the database, the CLI's
// `-o json`, request bodies the client sends) is made here or by codec::DumpCompact, which calls
// this for anything but plain ASCII. nlohmann's dump() throws type_error.316 on a string that is
// not valid UTF-8; thrown on an I/O loop, that ended the server. Input edges refuse such text,
// but text stored before they did (or written to the store by other means) must still be
// served: here each offending byte becomes U+FFFD instead, and nothing throws.

#include <nlohmann/json.hpp>
#include <string>

namespace gpupool {

// `value.dump(indent)` that never throws: invalid UTF-8 is replaced by U+FFFD. indent < 0 is
// the compact form.
std::string DumpJson(const nlohmann::ordered_json& value, int indent = -1);
std::string DumpJson(const nlohmann::json& value, int indent = -1);

}  // namespace gpupool
