#include "config/json_fields.h"

#include "codec/field_path.h"
#include "common/json_text.h"
#include "common/strings.h"

namespace gpupool::config::internal {

std::string Dump(const Json& value) { return DumpJson(value); }

std::string TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::null:
      return "null";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

std::string Got(const Json& value) {
  std::string out = "got " + TypeName(value);
  if (value.is_primitive() && !value.is_null()) {
    std::string text = Dump(value);
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    out += " " + text;
  }
  return out;
}

Status TypeError(std::string_view path, std::string_view expected, const Json& value) {
  return InvalidArgumentError(std::string(path) + ": expected " + std::string(expected) + ", " +
                              Got(value));
}

Status CheckKeys(const Json& value, std::string_view path, const std::vector<std::string>& known) {
  if (!value.is_object()) return TypeError(path.empty() ? "(top level)" : path, "an object", value);
  for (const auto& [key, unused] : value.items()) {
    bool found = false;
    for (const std::string& k : known) {
      if (k == key) {
        found = true;
        break;
      }
    }
    if (!found) {
      return InvalidArgumentError("unknown field " + codec::FieldPath(path, key) +
                                  DidYouMean(key, known));
    }
  }
  return OkStatus();
}

Status CheckObject(const Json& value, std::string_view path,
                   std::initializer_list<std::string_view> known) {
  std::vector<std::string> names(known.begin(), known.end());
  return CheckKeys(value, path, names);
}

Status CheckBodyFields(const Json& body, std::span<const std::string_view> fields) {
  std::vector<std::string> names{"name"};
  names.insert(names.end(), fields.begin(), fields.end());
  return CheckKeys(body, "", names);
}

namespace {
const Json* Find(const Json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end()) return nullptr;
  return &*it;
}
}  // namespace

Status ReadString(const Json& obj, std::string_view key, std::string_view path, std::string* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return OkStatus();
  if (!v->is_string()) return TypeError(codec::FieldPath(path, key), "a string", *v);
  *out = v->get<std::string>();
  return OkStatus();
}

Status ReadBool(const Json& obj, std::string_view key, std::string_view path, bool* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return OkStatus();
  if (!v->is_boolean())
    return TypeError(codec::FieldPath(path, key), "a boolean (true or false)", *v);
  *out = v->get<bool>();
  return OkStatus();
}

Status ReadInt(const Json& obj, std::string_view key, std::string_view path, int64_t* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return OkStatus();
  if (v->is_number_integer()) {
    *out = v->get<int64_t>();
    return OkStatus();
  }
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return TypeError(codec::FieldPath(path, key), "an integer", *v);
    *out = static_cast<int64_t>(u);
    return OkStatus();
  }
  return TypeError(codec::FieldPath(path, key), "an integer", *v);
}

Status ReadStringList(const Json& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return OkStatus();
  std::string p = codec::FieldPath(path, key);
  if (!v->is_array()) return TypeError(p, "a list of strings", *v);
  out->clear();
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    if (!e.is_string()) return TypeError(codec::IndexPath(p, i), "a string", e);
    out->push_back(e.get<std::string>());
  }
  return OkStatus();
}

Status ReadOptString(const Json& obj, std::string_view key, std::string_view path,
                     std::optional<std::string>* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr || v->is_null()) {
    *out = std::nullopt;
    return OkStatus();
  }
  if (!v->is_string()) return TypeError(codec::FieldPath(path, key), "a string or null", *v);
  *out = v->get<std::string>();
  return OkStatus();
}

void WriteField(Json& obj, std::string_view key, Json value, bool is_default) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (is_default) return;
    obj[std::string(key)] = std::move(value);
    return;
  }
  *it = std::move(value);
}

}  // namespace gpupool::config::internal
