#pragma once
// Errors located in the user's file (`gpupool apply -f`, `config update --file`): a decoder's
// message ("q.resourcez: unknown field ...") turned into "<file>:<line>:<column>: Queue q:
// spec.resourcez: unknown field ...", at the field's own line and column. Internal to the
// service module.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/status.h"

namespace gpupool::service {

// One document of a user's file (a manifest, or a config file), with what points its errors at
// the field's own line.
struct SourceDocument {
  nlohmann::ordered_json
      value;  // the manifest (apply); unused for a config file, whose body the request holds
  std::string file;
  int line = 1;  // where the document starts
  // Shared: the items of a NodeList, and the configs of a map-form config file, are documents of
  // their file's one map.
  std::shared_ptr<const codec::JsonSourceMap> map;
  // The document's field path in `map`: "", "items[3]" (a NodeList's item), "p" (config "p" of
  // a config file's map form {"p": {...}}).
  std::string map_path;
};

// What a document is, for its errors, and how its decoder's field paths map into it.
struct DocumentSubject {
  std::string text;          // how errors name it: "Queue q" (a manifest), `pool "p"` (a config)
  std::string name;          // its name, with which a decoder's message may start
  std::string root;          // the field the decoder read: "spec" (a config manifest), or ""
  bool name_rooted = false;  // the decoder's paths start with the name ("q.resources")
};

// A manifest as errors name it: "Queue q", or "Node" when it has no name.
DocumentSubject ManifestSubject(std::string_view kind, std::string name, std::string root = "",
                                bool name_rooted = false);

// "spec" + "resources" -> "spec.resources", "spec" + "[0]" -> "spec[0]".
std::string JoinPath(std::string_view parent, std::string_view child);

// Where `path` is in the document, or else its nearest enclosing field the map knows (a missing
// required field is reported where its object is); the document's first line when none is.
codec::SourcePosition NearestPosition(const SourceDocument& doc, std::string_view path);

// "<file>:<line>:<column>: <subject>: <path>: <what>", at `path` in the document (or its nearest
// enclosing field the map knows); an empty subject or path is left out.
Status AtField(const SourceDocument& doc, std::string_view subject, std::string_view path,
               std::string_view what, StatusCode code = StatusCode::kInvalidArgument);

struct FieldError {
  std::string path;  // as the decoder names it; "" when the message names none
  std::string what;
};

// Decoders word errors "<path>: <what>" or "unknown field <path> (did you mean ...)"
// (config/json_fields.h); a message whose first part has spaces names no path.
FieldError SplitFieldError(std::string_view message);

// A decoder's error, pointed at the document's field it is about.
Status LocateError(const Status& status, const SourceDocument& doc, const DocumentSubject& subject);

// Where a file's JSON text starts (its first non-blank character, `{` or `[`, as
// codec::ParseJsonOrYamlDocuments decides); nullopt for YAML.
std::optional<size_t> JsonStart(std::string_view text);

}  // namespace gpupool::service
