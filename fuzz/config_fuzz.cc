// One config kind (GPUPOOL_FUZZ_KIND: "POOL", "POD_TEMPLATE", ...) through the entry point the
// CLI (`gpupool config update KIND [NAME] --file F`) and the server (PUT /api/configs/KIND[/NAME],
// PATCH /api/configs/KIND/NAME) share: service::Service::UpdateConfig and PatchConfig, on a fresh
// store with the built-in configs. The input is the file: JSON when it starts with `{` or `[`,
// else one YAML document, as the server decodes a body.
//
// Invariants:
//   * a refusal is InvalidArgument or FailedPrecondition, names the file, and is UTF-8;
//   * whatever was written shows (`config show -o json|yaml`, `config list`, `config history`):
//     its JSON dumps without throwing, its YAML reads back as the same value;
//   * a stored body is a valid config: writing it again as it is succeeds.

#include <optional>
#include <string>

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/service_fixture.h"
#include "model/json_io.h"

#ifndef GPUPOOL_FUZZ_KIND
#error "GPUPOOL_FUZZ_KIND must name the config kind (fuzz/CMakeLists.txt)"
#endif

namespace gpupool::fuzz {
namespace {

constexpr char kKind[] = GPUPOOL_FUZZ_KIND;
constexpr char kFile[] = "config.json";

// The body as the server's DecodeBody reads it: JSON for `{`/`[`, else one YAML document.
Result<Json> DecodeFile(std::string_view text) {
  std::string_view trimmed = Trim(text);
  if (trimmed.empty()) return InvalidArgumentError(std::string(kFile) + ": empty");
  if (trimmed.front() == '{' || trimmed.front() == '[') return model::ParseJson(text, kFile);
  ASSIGN_OR_RETURN(auto documents, model::ParseYamlDocuments(text, kFile));
  if (documents.size() != 1) return InvalidArgumentError(std::string(kFile) + ": not one document");
  return std::move(documents[0].value);
}

void CheckRefusal(const Status& status, std::string_view what, bool utf8) {
  Check(status.code() == StatusCode::kInvalidArgument ||
            status.code() == StatusCode::kFailedPrecondition,
        std::string(what) + ": a refused config is InvalidArgument or FailedPrecondition",
        status.ToString());
  Check(!status.message().empty(), std::string(what) + ": empty error message");
  if (utf8) {
    Check(IsValidUtf8(status.message()), std::string(what) + ": error message is not UTF-8",
          status.message());
  }
}

// `config show`, `config list` and `config history` of what was written; each stored body is
// written again unchanged.
void CheckWritten(ServiceFixture& fixture, const service::WriteResult& written) {
  service::Service& service = fixture.service();
  CheckedDump(service::ToJson(written), "the write result");
  for (const service::ConfigChange& change : written.changes) {
    auto view = service.ShowConfig(change.kind, change.name);
    Check(view.ok(), "a written config shows", view.status().ToString());
    CheckedDump(service::ToJson(*view), "config show -o json");
    CheckYamlRoundTrip(view->body, "config show -o yaml");

    service::UpdateConfigRequest again;
    again.kind = change.kind;
    again.name = change.name;
    again.body = view->body;
    again.file_name = "stored.json";
    auto rewritten = service.UpdateConfig(fixture.admin(), again);
    Check(rewritten.ok(), "a stored config can be written again as it is",
          change.kind + " " + change.name + ": " + rewritten.status().ToString() +
              "\nbody: " + view->body.dump(-1, ' ', true, Json::error_handler_t::replace));
  }
  auto list = service.ListConfigs(kKind);
  Check(list.ok(), "config list", list.status().ToString());
  for (const auto& view : *list) CheckedDump(service::ToJson(view), "config list -o json");
  service::HistoryFilter filter;
  filter.kind = kKind;
  auto history = service.History(filter);
  Check(history.ok(), "config history", history.status().ToString());
  for (const auto& entry : *history) CheckedDump(service::ToJson(entry), "config history -o json");
}

// The built-in config of the kind, the target of the merge patch when the input wrote none.
std::optional<std::string> BuiltinName() {
  const std::string kind = kKind;
  if (kind == "POOL") return "default";
  if (kind == "POD_TEMPLATE") return "default_user";
  if (kind == "RESOURCE_VALIDATION") return "default_cpu";
  if (kind == "ROLE") return "osmo-user";
  return std::nullopt;
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  const bool utf8 = IsValidUtf8(text);
  auto body = DecodeFile(text);
  if (!body.ok()) {
    CheckInputError(body.status(), "decoding the file", utf8, kFile);
    return 0;
  }
  auto fixture = ServiceFixture::Open();
  service::Service& service = fixture->service();

  std::optional<std::string> written_name;
  // The file's own names (map form, or "name" in it), then the name on the command line.
  for (std::optional<std::string> name :
       {std::optional<std::string>(), std::optional<std::string>("fz")}) {
    service::UpdateConfigRequest request;
    request.kind = kKind;
    request.name = name;
    request.body = *body;
    request.file_name = kFile;
    request.text = std::string(text);
    auto written = service.UpdateConfig(fixture->admin(), request);
    if (!written.ok()) {
      CheckRefusal(written.status(), "UpdateConfig", utf8);
      continue;
    }
    CheckWritten(*fixture, *written);
    if (!written->changes.empty()) written_name = written->changes.front().name;
  }

  // The same document as a merge patch of a config that exists.
  std::optional<std::string> target = written_name ? written_name : BuiltinName();
  if (target && body->is_object()) {
    service::PatchConfigRequest patch;
    patch.kind = kKind;
    patch.name = *target;
    patch.patch = *body;
    auto patched = service.PatchConfig(fixture->admin(), patch);
    if (patched.ok()) {
      CheckWritten(*fixture, *patched);
    } else {
      CheckRefusal(patched.status(), "PatchConfig", utf8);
    }
  }
  return 0;
}
