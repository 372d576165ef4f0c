// Workflow specs and their templating, through `gpupool workflow submit FILE --pool default
// [--set k=v] [--dry-run]` (service::Service::SubmitWorkflow, which the server's POST
// /api/pool/{pool}/workflow calls too) on a fresh store with the built-in configs and two nodes.
// The input is the file; its leading `#set k=v` lines (YAML comments) are also passed as --set
// values, through the CLI's parser (submit::ParseSetValue).
//
// Invariants:
//   * ParseWorkflow refuses with InvalidArgument naming the file; what it accepts dumps as JSON;
//   * a dry run that succeeds dumps its pods as JSON and YAML (`--dry-run -o json|yaml`), and the
//     same submission without --dry-run succeeds too, then shows, lists and cancels.

#include <map>
#include <string>

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/service_fixture.h"
#include "submit/workflow.h"

namespace gpupool::fuzz {
namespace {

constexpr char kFile[] = "workflow.yaml";

std::map<std::string, std::string> LeadingSetValues(std::string_view text) {
  std::map<std::string, std::string> values;
  constexpr std::string_view kMarker = "#set ";
  while (StartsWith(text, kMarker)) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(kMarker.size(), newline - kMarker.size());
    auto value = submit::ParseSetValue(line);
    if (value.ok()) values[value->first] = value->second;
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return values;
}

void CheckSubmitRefusal(const Status& status, std::string_view what, bool utf8) {
  Check(status.code() == StatusCode::kInvalidArgument ||
            status.code() == StatusCode::kFailedPrecondition,
        std::string(what) + ": a refused submission is InvalidArgument or FailedPrecondition",
        status.ToString());
  if (utf8) {
    Check(IsValidUtf8(status.message()), std::string(what) + ": error message is not UTF-8",
          status.message());
  }
}

void CheckStored(ServiceFixture& fixture, const std::string& id) {
  service::Service& service = fixture.service();
  auto view = service.QueryWorkflow(fixture.admin(), id);
  Check(view.ok(), "a submitted workflow shows", view.status().ToString());
  CheckedDump(service::ToJson(*view), "workflow query -o json");
  CheckYamlRoundTrip(service::ToJson(*view), "workflow query -o yaml");
  auto text = service.QueryWorkflowJson(fixture.admin(), id);
  Check(text.ok(), "a submitted workflow shows as JSON text", text.status().ToString());
  auto list = service.ListWorkflows(fixture.admin(), {});
  Check(list.ok() && list->size() == 1, "the submitted workflow is listed",
        list.status().ToString());
  auto canceled = service.CancelWorkflow(fixture.admin(), id);
  Check(canceled.ok(), "a pending workflow cancels", canceled.status().ToString());
  CheckedDump(service::ToJson(*canceled), "workflow cancel -o json");
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  const bool utf8 = IsValidUtf8(text);
  const std::map<std::string, std::string> set_values = LeadingSetValues(text);

  auto spec = submit::ParseWorkflow(text, kFile, set_values);
  if (!spec.ok()) {
    CheckInputError(spec.status(), "ParseWorkflow", utf8, kFile);
    return 0;
  }
  CheckedDump(spec->document, "the parsed workflow");

  auto fixture = ServiceFixture::Open();
  service::SubmitRequest request;
  request.pool = "default";
  request.spec_text = std::string(text);
  request.file_name = kFile;
  request.set_values = set_values;
  request.dry_run = true;
  auto dry_run = fixture->service().SubmitWorkflow(fixture->admin(), request);
  if (!dry_run.ok()) {
    CheckSubmitRefusal(dry_run.status(), "dry run", utf8);
    return 0;
  }
  const Json result = service::ToJson(*dry_run);
  CheckedDump(result, "workflow submit --dry-run -o json");
  CheckYamlRoundTrip(result, "workflow submit --dry-run -o yaml");

  request.dry_run = false;
  auto submitted = fixture->service().SubmitWorkflow(fixture->admin(), request);
  Check(submitted.ok(), "a submission whose dry run succeeds is accepted",
        submitted.status().ToString());
  CheckedDump(service::ToJson(*submitted), "workflow submit -o json");
  CheckStored(*fixture, submitted->workflow_id);
  return 0;
}
