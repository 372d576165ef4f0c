#pragma once
// Compact JSON text of a value, as nlohmann writes it, without its cost on plain ASCII.

#include <nlohmann/json.hpp>
#include <string>

namespace gpupool::codec {

// DumpJson(value) (common/json_text.h), byte for byte, in a fraction of its time for the usual
// documents. nlohmann's serializer decodes every string byte by byte as UTF-8; most strings here
// (names, images, labels, quantities) are plain ASCII, which is copied as it is. Strings that need
// escapes or hold other bytes, and floats, still go through DumpJson, so the output stays the
// same and nothing throws: bytes that are not UTF-8 become U+FFFD. `*invalid_utf8`, when given,
// is set if some string or key was not UTF-8 (the store refuses such a body rather than alter it).
std::string DumpCompact(const nlohmann::ordered_json& value, bool* invalid_utf8 = nullptr);
// Appends DumpCompact(value) to `out`.
void AppendCompact(const nlohmann::ordered_json& value, std::string& out,
                   bool* invalid_utf8 = nullptr);

}  // namespace gpupool::codec
