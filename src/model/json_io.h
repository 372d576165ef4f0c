#pragma once
// The JSON and YAML codec (src/codec/) under the names it had when it lived in src/model, for
// src/service/manifests.cc, the one caller not yet moved to the codec's own headers and names
// (codec::ParseJson and so on). New code includes the codec's headers (and model/input_file.h
// for ReadFile); this header goes once manifests.cc no longer includes it.

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "codec/yaml_writer.h"
#include "model/input_file.h"

namespace gpupool::model {

using codec::AppendCompact;
using codec::CheckNestingDepth;
using codec::CheckYamlText;
using codec::DumpCompact;
using codec::FieldPath;
using codec::IndexPath;
using codec::JsonSourceMap;
using codec::JsonTypeName;
using codec::NestingDepth;
using codec::ParseDocumentsWithSourceMaps;
using codec::ParseJson;
using codec::ParseJsonOrYamlDocuments;
using codec::ParseYamlDocuments;
using codec::PositionOfOffset;
using codec::SourcePosition;
using codec::ToYaml;
using codec::YamlDocument;

}  // namespace gpupool::model
