#pragma once
// Template variables (research/osmo.md §2.4, DESIGN §3.3) and `{{VAR}}` rendering.
//
// Precedence, low to high: pool common_default_variables < platform default_variables < the
// task's resource values (USER_CPU, USER_GPU, USER_MEMORY, USER_STORAGE, ...; only values that
// are set) < built-ins (WF_ID, WF_POOL, WF_PLATFORM, WF_TASK_NAME, WF_GROUP_NAME,
// WF_SUBMITTED_BY, WF_PRIORITY, USER_CONTAINER_NAME, ...). A variable whose value is JSON null
// is not defined.
//
// Rendering (a deliberate subset of OSMO's Jinja): `{{NAME}}` or `{{ NAME }}` where NAME is
// [A-Za-z_][A-Za-z0-9_]*; other expressions are an error. Applied to every string value (never
// to keys), recursively through objects and lists. The result is always a string, as in OSMO:
// "{{USER_GPU}}" with USER_GPU = 1 becomes "1" (numbers print as JSON prints them: 4 -> "4",
// 1.5 -> "1.5"; booleans "true"/"false"). A rendered string of the exact form `ARRAY:[a,b,c]`
// becomes the JSON list ["a","b","c"] (elements trimmed; `ARRAY:[]` is [] where OSMO gives
// [""]). An undefined variable is InvalidArgument:
//   pod template "default_user" field spec.containers[0].resources.limits.cpu uses undefined
//   variable USER_CPUS (did you mean "USER_CPU"?)

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "config/kinds.h"

namespace gpupool::config {

// Variable name -> its text (already stringified).
using VariableMap = std::map<std::string, std::string, std::less<>>;

// The text of a variable value: string as is, integer "4", float as JSON prints it, bool
// "true"/"false". null -> nullopt (undefined). Objects/arrays -> InvalidArgument at `path`.
Result<std::optional<std::string>> VariableText(const Json& value, std::string_view path);

// Adds the object's variables to `vars` (overwriting); null values remove the name.
Status AddVariables(VariableMap& vars, const Json& object, std::string_view path);

// The built-in variables of one task. Empty strings are not defined.
struct TaskContext {
  std::string workflow_id;     // WF_ID
  std::string workflow_uuid;   // WF_UUID
  std::string pool;            // WF_POOL
  std::string platform;        // WF_PLATFORM
  std::string task_name;       // WF_TASK_NAME
  std::string task_uuid;       // WF_TASK_UUID
  std::string group_name;      // WF_GROUP_NAME
  std::string group_uuid;      // WF_GROUP_UUID
  std::string submitted_by;    // WF_SUBMITTED_BY
  std::string priority;        // WF_PRIORITY (lower case: high, normal, low)
  std::string retry_id = "0";  // WF_RETRY_ID
  std::string container_name;  // USER_CONTAINER_NAME (k8s-safe task name)
};
void AddBuiltins(VariableMap& vars, const TaskContext& task);

// pool < platform < user_values < builtins. `platform` may be null (no platform).
// Also derives USER_MEMORY_VAL / USER_MEMORY_UNIT and USER_STORAGE_VAL / USER_STORAGE_UNIT
// when USER_MEMORY / USER_STORAGE look like `<number><unit>`.
Result<VariableMap> ResolveVariables(const Pool& pool, const Platform* platform,
                                     const VariableMap& user_values, const TaskContext& task);

// The same in two steps, so a caller can compute the platform part once and reuse it for many
// tasks: ResolveVariables == OverlayTask(*PlatformVariables(pool, platform), user, task).
Result<VariableMap> PlatformVariables(const Pool& pool, const Platform* platform);
void OverlayTask(VariableMap& vars, const VariableMap& user_values, const TaskContext& task);

// Renders one string. `what` and `path` name it in errors ("pod template \"x\"",
// "spec.containers[0].image"). Returns the rendered text (no ARRAY: handling).
Result<std::string> RenderString(std::string_view text, const VariableMap& vars,
                                 std::string_view what, std::string_view path);

// True when the text contains "{{".
bool HasPlaceholders(std::string_view text);

// Renders every string value of `tmpl` (see the header comment). `template_name` is used in
// errors as `pod template "<name>"`; pass e.g. "platform a100 of pool p" for a merged template.
Result<Json> Render(const Json& tmpl, const VariableMap& vars, std::string_view template_name);
// In place.
Status RenderInPlace(Json& tmpl, const VariableMap& vars, std::string_view template_name);

}  // namespace gpupool::config
