#include "service/located_errors.h"

#include "common/strings.h"

namespace gpupool::service {
namespace {}  // namespace

// A manifest as errors name it: "Queue q", or "Node" when it has no name.
DocumentSubject ManifestSubject(std::string_view kind, std::string name, std::string root,
                                bool name_rooted) {
  std::string text = name.empty() ? std::string(kind) : std::string(kind) + " " + name;
  return {std::move(text), std::move(name), std::move(root), name_rooted};
}

// "spec" + "resources" -> "spec.resources", "spec" + "[0]" -> "spec[0]".
std::string JoinPath(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  if (child.empty()) return std::string(parent);
  return std::string(parent) + (child.front() == '[' ? "" : ".") + std::string(child);
}

// Where `path` is in the document, or else its nearest enclosing field the map knows: a missing
// required field is reported where its object is.
codec::SourcePosition NearestPosition(const SourceDocument& doc, std::string_view path) {
  std::string at = JoinPath(doc.map_path, path);
  while (true) {
    if (auto found = doc.map->FindFieldPath(at)) return *found;
    if (at.size() <= doc.map_path.size()) break;
    const size_t cut = at.find_last_of(".[");
    at = cut == std::string::npos ? "" : at.substr(0, cut);
  }
  return codec::SourcePosition{doc.line, 1};
}

// "<file>:<line>:<column>: <subject>: <path>: <what>", at `path` in the document; an empty
// subject or path is left out.
Status AtField(const SourceDocument& doc, std::string_view subject, std::string_view path,
               std::string_view what, StatusCode code) {
  const codec::SourcePosition at = NearestPosition(doc, path);
  std::string message =
      doc.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
  if (!subject.empty()) message += std::string(subject) + ": ";
  if (!path.empty()) message += std::string(path) + ": ";
  return Status(code, message + std::string(what));
}

namespace {

// A decoder's message without the subject it starts with (`pool "p": `, `resource validation
// "v": `, `QUEUE "q": `, `node "n": `): the document's subject replaces it.
std::string_view WithoutSubject(std::string_view message, std::string_view name) {
  const std::string marker = Quoted(name) + ": ";
  const size_t at = message.find(marker);
  if (at == std::string_view::npos || at < 2 || message[at - 1] != ' ') return message;
  for (char c : message.substr(0, at)) {
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != ' ' && c != '_') return message;
  }
  return message.substr(at + marker.size());
}

}  // namespace

// Decoders word errors "<path>: <what>" or "unknown field <path> (did you mean ...)"
// (config/json_fields.h); "(top level)" is the decoded value itself. A message whose first part
// has spaces names no path.
FieldError SplitFieldError(std::string_view message) {
  constexpr std::string_view kUnknown = "unknown field ";
  if (StartsWith(message, kUnknown)) {
    std::string_view rest = message.substr(kUnknown.size());
    const size_t end = std::min(rest.find(' '), rest.size());
    return {std::string(rest.substr(0, end)), "unknown field" + std::string(rest.substr(end))};
  }
  const size_t colon = message.find(": ");
  if (colon == std::string_view::npos) return {"", std::string(message)};
  const std::string_view head = message.substr(0, colon);
  const std::string what(message.substr(colon + 2));
  if (head == "(top level)") return {"", what};
  if (head.empty() || head.find(' ') != std::string_view::npos) return {"", std::string(message)};
  return {std::string(head), what};
}

namespace {

// The document's field path for a decoder's: OSMO kinds' paths are relative to the body (a
// manifest's spec); the other kinds' decoders and MachinePoolSupport::check start theirs with
// the config's name (as `config update` without a file text shows them); a node's are the
// document's own.
std::string DocumentPath(std::string_view path, const DocumentSubject& subject) {
  if (subject.name_rooted && StartsWith(path, subject.name)) {
    std::string_view rest = path.substr(subject.name.size());
    if (rest.empty() || rest.front() == '.' || rest.front() == '[') {
      if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
      return JoinPath(subject.root, rest);
    }
  }
  return JoinPath(subject.root, path);
}

}  // namespace

// A decoder's error, pointed at the document's field it is about.
Status LocateError(const Status& status, const SourceDocument& doc,
                   const DocumentSubject& subject) {
  if (status.ok()) return status;
  const FieldError error = SplitFieldError(WithoutSubject(status.message(), subject.name));
  return AtField(doc, subject.text, DocumentPath(error.path, subject), error.what, status.code());
}

// Where a file's JSON text starts (its first non-blank character, `{` or `[`, as
// codec::ParseJsonOrYamlDocuments decides); nullopt for YAML.
std::optional<size_t> JsonStart(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || (text[start] != '{' && text[start] != '[')) {
    return std::nullopt;
  }
  return start;
}

}  // namespace gpupool::service
