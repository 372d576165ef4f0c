#pragma once
// Pod-template merge (research/osmo.md §2.3, DESIGN §3.5). MergeInto(dst, src) walks src's keys
// in insertion order:
//   * src value an object: dst[k] = merge(dst[k], v) when dst[k] is an object; a map over a
//     non-map (absent, null, scalar, list) replaces it with v;
//   * src value a list: when dst[k] is a list, the lists merge (below); else v replaces dst[k];
//   * anything else (string, number, bool, null) overwrites. null does not delete.
// Lists: elements of src that are objects with a "name" key and whose name is found among dst's
// named objects merge recursively into that element (last index of a duplicate name wins); all
// other src elements are appended in src order, except that an element exactly equal to one
// already in the list is dropped (gpupool's improvement: OSMO appends duplicates, e.g. the same
// toleration from two templates). Key order: existing keys keep their place, new keys go last.

#include <string>
#include <vector>

#include "common/status.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "config/variables.h"

namespace gpupool::config {

void MergeInto(Json& dst, const Json& src);
// merge(merge({}, a), b) without touching the inputs.
Json Merged(const Json& a, const Json& b);

// Folds the named templates in order onto {}. NotFound `pod template "x" does not exist` (with a
// did-you-mean) when one is missing.
Result<Json> MergeTemplates(const std::vector<std::string>& names, const ConfigSet& set);

// The platform's template: the pool's common_pod_template in order, then the platform's
// override_pod_template. Unrendered. NotFound for an unknown platform (listing the pool's
// platforms) or template.
Result<Json> PlatformTemplate(const Pool& pool, std::string_view platform, const ConfigSet& set);

// Names of the templates of a platform, in merge order (common, then override).
std::vector<std::string> PlatformTemplateNames(const Pool& pool, const Platform& platform);

// Renders a platform's merged template (Render). When a variable is undefined the error names
// the template among `template_names` that introduced it, with the field path inside that
// template: `pod template "default_user" field spec.containers[0].resources.limits.cpu uses
// undefined variable USER_CPUS`.
Result<Json> RenderPlatformTemplate(const Json& merged,
                                    const std::vector<std::string>& template_names,
                                    const ConfigSet& set, const VariableMap& vars);

// The platform's rules: the sets of the pool's common_resource_validations in order, then the
// platform's resource_validations (osmo.md §3.4: concatenated, no dedupe).
struct NamedRule {
  std::string set;   // validation set the rule came from
  size_t index = 0;  // index of the rule within its set
  ValidationRule rule;
};
Result<std::vector<NamedRule>> PlatformRules(const Pool& pool, std::string_view platform,
                                             const ConfigSet& set);

// `config show POOL NAME -v` (OSMO's verbose pool): the pool body plus, per platform, the
// computed fields parsed_pod_template (merged, unrendered), parsed_resource_validations (the
// concatenated rules), labels (the merged spec.nodeSelector) and tolerations (the merged
// spec.tolerations). Missing templates/validation sets are errors.
Result<Json> PoolVerboseJson(const Pool& pool, const ConfigSet& set);

}  // namespace gpupool::config
