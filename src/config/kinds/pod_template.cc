#include <algorithm>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"
#include "config/variables.h"
#include "model/k8s.h"

namespace gpupool::config {

using internal::TypeError;

// ---- POD_TEMPLATE -------------------------------------------------------------------------

namespace {

Status CheckPodTemplateBody(const Json& body) {
  if (!body.is_object()) return TypeError("(top level)", "an object (a partial Pod)", body);
  // A Pod's own fields only: a key of any other name could not be told from the map form
  // {"<template>": {...}} when the template is written again (config/kinds.h, SplitConfigFile).
  static const std::vector<std::string> kPodFields = {"apiVersion", "kind", "metadata", "spec"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(kPodFields.begin(), kPodFields.end(), key) != kPodFields.end()) continue;
    return InvalidArgumentError(key + ": unknown field" + DidYouMean(key, kPodFields) +
                                "; a pod template is a partial Pod: apiVersion, kind, metadata, "
                                "spec");
  }
  auto spec = body.find("spec");
  if (spec != body.end()) {
    if (!spec->is_object()) return TypeError("spec", "an object", *spec);
    auto selector = spec->find("nodeSelector");
    if (selector != spec->end()) {
      if (!selector->is_object()) return TypeError("spec.nodeSelector", "an object", *selector);
      for (const auto& [k, v] : selector->items()) {
        if (!v.is_string())
          return TypeError(codec::FieldPath("spec.nodeSelector", k), "a string", v);
      }
    }
    auto tolerations = spec->find("tolerations");
    if (tolerations != spec->end()) {
      if (!tolerations->is_array()) {
        return TypeError("spec.tolerations", "a list of tolerations", *tolerations);
      }
      for (size_t i = 0; i < tolerations->size(); ++i) {
        const Json& t = (*tolerations)[i];
        std::string p = codec::IndexPath("spec.tolerations", i);
        if (!t.is_object()) return TypeError(p, "an object", t);
        if (HasPlaceholders(internal::Dump(t))) continue;  // checked after rendering
        Result<model::Toleration> parsed = model::TolerationFromJson(t, p);
        if (!parsed.ok()) return parsed.status();
      }
    }
    for (const char* list : {"containers", "initContainers", "volumes"}) {
      auto it = spec->find(list);
      if (it == spec->end()) continue;
      std::string p = codec::FieldPath("spec", list);
      if (!it->is_array()) return TypeError(p, "a list", *it);
      for (size_t i = 0; i < it->size(); ++i) {
        if (!(*it)[i].is_object()) return TypeError(codec::IndexPath(p, i), "an object", (*it)[i]);
      }
    }
  }
  auto metadata = body.find("metadata");
  if (metadata != body.end() && !metadata->is_object()) {
    return TypeError("metadata", "an object", *metadata);
  }
  return OkStatus();
}

}  // namespace

Result<PodTemplate> PodTemplateFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("pod template", name));
  Status s = CheckPodTemplateBody(body);
  if (!s.ok()) return s.WithContext("pod template \"" + std::string(name) + "\"");
  return PodTemplate{std::string(name), body};
}

Json PodTemplateToJson(const PodTemplate& tmpl) { return tmpl.body; }

}  // namespace gpupool::config
