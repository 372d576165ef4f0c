#pragma once
// The text of a workflow file on its way to ParseWorkflow (submit/workflow.h): its `{{ name }}`
// templates rendered from `default-values` and `--set`, and every error placed at the line and
// column of the file as the user wrote it, even when the parsed text is the rendered one.
// Internal to the submit module.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/status.h"

namespace gpupool::submit::internal {

// Where a position of the rendered text (after `{{ }}` substitution) is in the file as written:
// text outside a substitution moves by the lengths substituted before it, text inside one is at
// its `{{`.
class TextMapping {
 public:
  explicit TextMapping(std::string_view original) : original_(original) {}

  // The text after substitution, once complete.
  void SetRendered(std::string_view rendered) { rendered_ = rendered; }

  // `{{...}}` at [original_begin, original_end) became [rendered_begin, rendered_end).
  void AddSplice(size_t original_begin, size_t original_end, size_t rendered_begin,
                 size_t rendered_end) {
    splices_.push_back({original_begin, original_end, rendered_begin, rendered_end});
  }

  // The position in the file as written of a position in the rendered text.
  codec::SourcePosition ToOriginal(codec::SourcePosition at) const;

 private:
  struct Splice {
    size_t original_begin, original_end, rendered_begin, rendered_end;
  };

  // The byte offset of a 1-based line and column (in characters) of the rendered text.
  size_t RenderedOffset(codec::SourcePosition at) const;

  std::string_view original_;
  std::string_view rendered_;
  std::vector<Splice> splices_;
};

// The workflow being read, for errors at the line and column of their field:
// "train.yaml:12:9: workflow.tasks[1].resurce: unknown field ...".
struct Source {
  std::string_view file_name;
  const codec::JsonSourceMap* map = nullptr;  // of the parsed (rendered) text; null: no positions
  const TextMapping* mapping = nullptr;       // null: the parsed text is the file's own
};

// "<file>:<line>:<column>: " at `path` (or the nearest field the map knows), "<file>: " without
// a map, "" without a file name.
std::string Prefix(const Source& src, std::string_view path = "");

// InvalidArgument "<prefix><path>: <what>".
Status FieldError(const Source& src, std::string_view path, std::string_view what);

// The file's one document, its templates rendered (default-values, then --set). Without a "{{"
// there is nothing to substitute: the text is parsed once, for its default-values and the
// workflow alike (when it does not parse, the rendering path reports the same errors as before).
// When rendered, `src.mapping` maps positions back to the file's text.
Result<std::vector<codec::YamlDocument>> ReadDocuments(
    std::string_view text, std::string_view file_name,
    const std::map<std::string, std::string>& set_values, TextMapping& mapping,
    std::string& rendered, Source& src);

}  // namespace gpupool::submit::internal
