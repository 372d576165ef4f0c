// The request decoding helpers of http_server.h: the query string, and bodies for handlers.

#include <cerrno>
#include <cstdlib>

#include "api/http_server.h"
#include "codec/json_reader.h"
#include "codec/yaml_reader.h"
#include "common/safe_text.h"
#include "common/strings.h"

namespace gpupool::api {

using Json = nlohmann::ordered_json;

Status CheckBodyText(const std::string& body) {
  auto bad = FindInvalidUtf8(body);
  if (!bad) return OkStatus();
  return InvalidArgumentError("request body:" + std::to_string(bad->line) + ":" +
                              std::to_string(bad->column) + ": not valid UTF-8 (byte " +
                              bad->ByteText() + ")");
}

namespace {

// Form-style decoding of one query component: %XX and '+' for a space. A malformed escape is
// kept as written (the value is then checked by the handler that reads it).
std::string DecodeQueryComponent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() && HexDigitValue(text[i + 1]) >= 0 &&
               HexDigitValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> query;
  size_t mark = target.find('?');
  if (mark == std::string_view::npos) return query;
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    query.emplace_back(DecodeQueryComponent(key), DecodeQueryComponent(value));
  }
  return query;
}

Result<Json> DecodeBody(const RouteRequest& request) {
  const std::string& body = request.Body();
  std::string_view trimmed = Trim(body);
  if (trimmed.empty()) return InvalidArgumentError("request body is empty");
  std::string content_type = ToLower(request.Header("Content-Type"));
  bool json = content_type.find("json") != std::string::npos || trimmed.front() == '{' ||
              trimmed.front() == '[';
  if (json) return codec::ParseJson(body, "request body");
  ASSIGN_OR_RETURN(auto docs, codec::ParseYamlDocuments(body, "request body"));
  if (docs.size() != 1) {
    return InvalidArgumentError("request body: expected one YAML document, found " +
                                std::to_string(docs.size()));
  }
  return std::move(docs[0].value);
}

namespace {

Status WrongType(std::string_view field, const char* want, const Json& value) {
  return InvalidArgumentError("request body: field \"" + std::string(field) + "\": expected " +
                              want + ", found " + codec::JsonTypeName(value));
}

const Json* FindField(const Json& body, std::string_view field) {
  if (!body.is_object()) return nullptr;
  auto it = body.find(std::string(field));
  return it == body.end() ? nullptr : &*it;
}

Status Missing(std::string_view field) {
  return InvalidArgumentError("request body: missing required field \"" + std::string(field) +
                              "\"");
}

}  // namespace

Result<std::string> StringField(const Json& body, std::string_view field,
                                std::optional<std::string> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_string()) return WrongType(field, "a string", *value);
  return value->get<std::string>();
}

Result<int64_t> IntField(const Json& body, std::string_view field,
                         std::optional<int64_t> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_number_integer()) return WrongType(field, "an integer", *value);
  return value->get<int64_t>();
}

Result<bool> BoolField(const Json& body, std::string_view field,
                       std::optional<bool> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_boolean()) return WrongType(field, "a boolean", *value);
  return value->get<bool>();
}

Result<std::optional<int64_t>> IntQuery(const RouteRequest& request, const std::string& name) {
  auto text = request.Query(name);
  if (!text) return std::optional<int64_t>();
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || errno != 0 || *end != '\0') {
    return InvalidArgumentError("query parameter " + name + "=\"" + *text +
                                "\": expected an integer");
  }
  return std::optional<int64_t>(value);
}

Result<bool> BoolQuery(const RouteRequest& request, const std::string& name, bool default_value) {
  auto text = request.Query(name);
  if (!text) return default_value;
  std::string lower = ToLower(*text);
  if (lower == "true" || lower == "1" || lower.empty()) return true;
  if (lower == "false" || lower == "0") return false;
  return InvalidArgumentError("query parameter " + name + "=\"" + *text +
                              "\": expected true or false");
}

}  // namespace gpupool::api
