#pragma once
// YAML text of a JSON value, for `-o yaml` and anything else a person reads.

#include <nlohmann/json.hpp>
#include <string>

namespace gpupool::codec {

// Block-style YAML for `-o yaml`. Strings that YAML would read as something else (numbers,
// bools, null, empty, leading/trailing spaces, special characters) are double-quoted. Ends with
// a newline. Empty objects/arrays print as `{}` / `[]`.
std::string ToYaml(const nlohmann::ordered_json& value);

}  // namespace gpupool::codec
