// Manifests (`gpupool apply -f FILE`, POST /api/apply): multi-document YAML or JSON of config kinds
// (apiVersion gpupool.io/v1) and Nodes, through service::Service::Apply on a fresh store with the
// built-in configs.
//
// Invariants: a refusal is InvalidArgument or FailedPrecondition and UTF-8; an apply that
// succeeds is idempotent (applying the same file again succeeds), and what it wrote shows as JSON
// and YAML (`config show`, `config list`).

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/service_fixture.h"

namespace gpupool::fuzz {
namespace {

void CheckRefusal(const Status& status, bool utf8) {
  Check(status.code() == StatusCode::kInvalidArgument ||
            status.code() == StatusCode::kFailedPrecondition,
        "a refused apply is InvalidArgument or FailedPrecondition", status.ToString());
  if (utf8) {
    Check(IsValidUtf8(status.message()), "apply: error message is not UTF-8", status.message());
  }
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  const bool utf8 = IsValidUtf8(text);
  auto fixture = ServiceFixture::Open();
  service::Service& service = fixture->service();
  service::ApplyRequest request;
  request.files.push_back({"manifests.yaml", std::string(text)});
  auto applied = service.Apply(fixture->admin(), request);
  if (!applied.ok()) {
    CheckRefusal(applied.status(), utf8);
    return 0;
  }
  CheckedDump(service::ToJson(*applied), "apply -o json");
  for (const service::ConfigChange& change : applied->configs.changes) {
    auto view = service.ShowConfig(change.kind, change.name);
    Check(view.ok(), "an applied config shows", view.status().ToString());
    CheckedDump(service::ToJson(*view), "config show -o json");
    CheckYamlRoundTrip(view->body, "config show -o yaml");
  }
  auto again = service.Apply(fixture->admin(), request);
  Check(again.ok(), "applying the same manifests again succeeds", again.status().ToString());
  auto list = service.ListConfigs(std::nullopt);
  Check(list.ok(), "config list after apply", list.status().ToString());
  for (const auto& view : *list) CheckedDump(service::ToJson(view), "config list -o json");
  return 0;
}
