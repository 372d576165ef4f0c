#include "submit/workflow_text.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace gpupool::submit::internal {
namespace {

using json = nlohmann::ordered_json;

std::string ScalarText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}

bool IsProtectedVariable(std::string_view name) {
  return name == "uuid" || name == "workflow_id" || name == "output" ||
         StartsWith(name, "input:") || StartsWith(name, "host:") || StartsWith(name, "output:");
}

// The `default-values:` block of a file whose templated text is not valid YAML yet.
std::string ExtractDefaultValuesBlock(std::string_view text) {
  std::string out;
  bool inside = false;
  for (const std::string& line : Split(text, '\n')) {
    if (!inside) {
      if (StartsWith(line, "default-values:")) {
        inside = true;
        out += line + "\n";
      }
      continue;
    }
    if (!line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#') break;
    out += line + "\n";
  }
  return out;
}

// The file's `default-values`, read before substitution: from the whole text when it is valid
// YAML already, else from its `default-values:` block alone.
Result<std::map<std::string, std::string>> DefaultValues(std::string_view text,
                                                         std::string_view file_name) {
  std::map<std::string, std::string> values;
  json defaults;
  Source src{file_name};
  auto docs = codec::ParseYamlDocuments(text, file_name);
  if (docs.ok()) {
    if (!docs->empty() && (*docs)[0].value.is_object() &&
        (*docs)[0].value.contains("default-values")) {
      defaults = std::move((*docs)[0].value["default-values"]);
      src.map = &(*docs)[0].source_map;
    }
  } else {
    std::string block = ExtractDefaultValuesBlock(text);
    if (block.empty()) return values;
    auto block_docs = codec::ParseYamlDocuments(block, file_name);
    if (!block_docs.ok() || block_docs->empty()) return values;
    // "default-values:x" (no space after the colon) reads as one string, not as a mapping.
    json& block_value = (*block_docs)[0].value;
    if (!block_value.is_object() || !block_value.contains("default-values")) return values;
    defaults = std::move(block_value["default-values"]);
  }
  if (defaults.is_null()) return values;
  if (!defaults.is_object()) {
    return FieldError(src, "default-values", "expected a map of name: value");
  }
  for (const auto& [key, v] : defaults.items()) values[key] = ScalarText(v);
  return values;
}

// Replaces `{{ name }}` in the text, recording each replacement in `mapping`; undefined names
// (other than OSMO's protected ones) fail with their line and column.
Result<std::string> Substitute(std::string_view text, std::string_view file_name,
                               const std::map<std::string, std::string>& values,
                               TextMapping& mapping) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    std::string name(Trim(text.substr(open + 2, close - open - 2)));
    out.append(text.substr(pos, open - pos));
    auto it = values.find(name);
    if (it != values.end()) {
      mapping.AddSplice(open, close + 2, out.size(), out.size() + it->second.size());
      out += it->second;
    } else if (IsProtectedVariable(name)) {
      out.append(text.substr(open, close + 2 - open));
    } else {
      std::vector<std::string> names;
      for (const auto& [k, v] : values) names.push_back(k);
      const codec::SourcePosition at = codec::PositionOfOffset(text, open);
      return InvalidArgumentError(
          std::string(file_name) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
          ": undefined variable \"" + name + "\"" + DidYouMean(name, names) +
          "; define it under default-values or pass --set " + name + "=VALUE");
    }
    pos = close + 2;
  }
  return out;
}

}  // namespace

codec::SourcePosition TextMapping::ToOriginal(codec::SourcePosition at) const {
  size_t offset = RenderedOffset(at);
  size_t original = offset;
  for (const Splice& s : splices_) {
    if (offset < s.rendered_begin) break;
    if (offset < s.rendered_end) {
      original = s.original_begin;
      return codec::PositionOfOffset(original_, original);
    }
    original = offset - s.rendered_end + s.original_end;
  }
  return codec::PositionOfOffset(original_, original);
}

size_t TextMapping::RenderedOffset(codec::SourcePosition at) const {
  size_t offset = 0;
  for (int line = 1; line < at.line && offset < rendered_.size(); ++line) {
    const size_t newline = rendered_.find('\n', offset);
    if (newline == std::string_view::npos) return rendered_.size();
    offset = newline + 1;
  }
  for (int column = 1; offset < rendered_.size(); ++offset) {
    if ((static_cast<unsigned char>(rendered_[offset]) & 0xC0) == 0x80) continue;
    if (column++ == at.column) break;
  }
  return offset;
}

std::string Prefix(const Source& src, std::string_view path) {
  if (src.file_name.empty()) return std::string();
  std::optional<codec::SourcePosition> at;
  if (src.map != nullptr) at = src.map->FindNearest(path);
  if (!at) return std::string(src.file_name) + ": ";
  if (src.mapping != nullptr) at = src.mapping->ToOriginal(*at);
  return std::string(src.file_name) + ":" + std::to_string(at->line) + ":" +
         std::to_string(at->column) + ": ";
}

Status FieldError(const Source& src, std::string_view path, std::string_view what) {
  return InvalidArgumentError(Prefix(src, path) + std::string(path) + ": " + std::string(what));
}

// The file's one document, its templates rendered (default-values, then --set). Without a "{{"
// there is nothing to substitute: the text is parsed once, for its default-values and the
// workflow alike (when it does not parse, the rendering path reports the same errors as before).
// When rendered, `src.mapping` maps positions back to the file's text.
Result<std::vector<codec::YamlDocument>> ReadDocuments(
    std::string_view text, std::string_view file_name,
    const std::map<std::string, std::string>& set_values, TextMapping& mapping,
    std::string& rendered, Source& src) {
  // Before templating: garbage is reported as what it is, not as an undefined variable.
  RETURN_IF_ERROR(codec::CheckYamlText(text, file_name));
  std::vector<codec::YamlDocument> docs;
  bool parsed = false;
  if (text.find("{{") == std::string_view::npos) {
    auto once = codec::ParseDocumentsWithSourceMaps(text, file_name);
    if (once.ok()) {
      docs = std::move(once).value();
      if (!docs.empty() && docs[0].value.is_object()) {
        auto it = docs[0].value.find("default-values");
        if (it != docs[0].value.end() && !it->is_null() && !it->is_object()) {
          return FieldError(Source{file_name, &docs[0].source_map}, "default-values",
                            "expected a map of name: value");
        }
      }
      parsed = true;
    }
  }
  if (!parsed) {
    ASSIGN_OR_RETURN(auto values, DefaultValues(text, file_name));
    for (const auto& [k, v] : set_values) values[k] = v;
    ASSIGN_OR_RETURN(rendered, Substitute(text, file_name, values, mapping));
    mapping.SetRendered(rendered);
    ASSIGN_OR_RETURN(docs, codec::ParseDocumentsWithSourceMaps(rendered, file_name));
    src.mapping = &mapping;
  }
  if (docs.size() != 1) {
    return InvalidArgumentError(Prefix(src) + "expected one document, found " +
                                std::to_string(docs.size()));
  }
  return docs;
}

}  // namespace gpupool::submit::internal
