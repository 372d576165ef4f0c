#include "backend/kubernetes/unschedulable_writer.h"

#include "common/clock.h"
#include "common/json_text.h"
#include "kube/api.h"
#include "kube/translate.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kFailedScheduling[] = "FailedScheduling";

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Json Involved(const kube::ObjectRef& ref) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", ref.name}, {"namespace", ref.namespace_}, {"uid", ref.uid}}}};
}

}  // namespace

void UnschedulableWriter::Report(const std::string& key, const kube::ObjectRef& ref,
                                 const std::function<Json()>& create, const std::string& message) {
  const auto now = std::chrono::steady_clock::now();
  auto op = std::make_shared<Op>();
  {
    std::lock_guard lock(mu_);
    auto [it, fresh] = entries_.try_emplace(key);
    Entry& entry = it->second;
    if (fresh || (!ref.uid.empty() && entry.ref.uid != ref.uid)) {  // new, or replaced
      entry = Entry{};
      entry.ref = ref;
      fresh = true;
    }
    const bool changed = entry.message != message;
    if (entry.creating) {  // the create's answer writes the latest message
      entry.message = message;
      return;
    }
    // A failed write is tried again after `repeat_` too, never every cycle.
    if (!fresh && !changed && now - entry.event_at < repeat_) return;
    const bool create_first = entry.ref.uid.empty() && create != nullptr;
    if (entry.ref.uid.empty() && !create) return;  // nothing to write on
    entry.message = message;
    entry.event_at = now;
    entry.generation = next_generation_++;
    entry.creating = create_first;
    op->key = key;
    op->generation = entry.generation;
    op->ref = entry.ref;
    if (create_first) op->create = create();
    op->message = message;
    op->patch = changed || create_first;
  }
  client_.Post([this, op] { Write(op); });
}

void UnschedulableWriter::Forget(const std::string& key, bool delete_pod) {
  kube::ObjectRef created;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    if (it->second.creating) {
      forgotten_while_creating_[key] = delete_pod;
    } else if (delete_pod && !it->second.ref.uid.empty()) {
      created = it->second.ref;
    }
    entries_.erase(it);
  }
  if (!created.uid.empty()) client_.Post([this, created] { DeleteCreated(created); });
}

void UnschedulableWriter::PodGone(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.creating) return;
  entries_.erase(it);  // the next report starts again: create, patch, a new Event
}

size_t UnschedulableWriter::Tracked() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool UnschedulableWriter::Current(const Op& op) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(op.key);
  return it != entries_.end() && it->second.generation == op.generation;
}

void UnschedulableWriter::Write(const std::shared_ptr<Op>& op) {
  if (!op->create) return Patch(op);
  const std::string collection = "/api/v1/namespaces/" + op->ref.namespace_ + "/pods";
  client_.Send({"POST", collection, DumpJson(*op->create)},
               [this, op](Result<kube::Response> answer) {
                 if (answer.ok() && answer->ok()) return Created(op, kube::RefOf(answer->Json()));
                 if (answer.ok() && answer->status == 409) return Found(op);
                 Created(op, {});  // refused: the next report tries again
               });
}

// The task's pod exists already (an earlier leader made it, or its launch did): write on it if
// it is still this attempt's and unbound.
void UnschedulableWriter::Found(const std::shared_ptr<Op>& op) {
  client_.Send({"GET", kube::PodPath(op->ref)}, [this, op](Result<kube::Response> got) {
    if (!got.ok() || !got->ok()) return Created(op, {});
    Json pod = got->Json();
    const std::string attempt =
        (*op->create)["metadata"]["annotations"].value(kube::kAttemptAnnotation, "");
    const bool ours = pod.value("/metadata/annotations"_json_pointer, Json::object())
                          .value(kube::kAttemptAnnotation, "") == attempt;
    const bool unbound = pod.value("/spec/nodeName"_json_pointer, "").empty();
    Created(op, ours && unbound ? kube::RefOf(pod) : kube::ObjectRef{});
  });
}

// The create (or find) answered: `ref` is the pod (uid "" when there is none to write on).
void UnschedulableWriter::Created(const std::shared_ptr<Op>& op, const kube::ObjectRef& ref) {
  bool delete_it = false;
  bool write = false;
  {
    std::lock_guard lock(mu_);
    auto forgotten = forgotten_while_creating_.find(op->key);
    if (forgotten != forgotten_while_creating_.end()) {
      delete_it = forgotten->second;
      forgotten_while_creating_.erase(forgotten);
    } else if (auto it = entries_.find(op->key); it != entries_.end()) {
      Entry& entry = it->second;
      entry.creating = false;
      entry.ref = ref.uid.empty() ? entry.ref : ref;
      op->ref = entry.ref;
      op->message = entry.message;  // the latest, reported while the create was in flight
      write = !ref.uid.empty();     // else the next report after `repeat_` tries again
    }
  }
  if (delete_it && !ref.uid.empty()) DeleteCreated(ref);
  if (write) Patch(op);
}

void UnschedulableWriter::Patch(const std::shared_ptr<Op>& op) {
  if (!op->patch) return RecordEvent(op);
  if (!Current(*op)) return;
  client_.Send({"PATCH", kube::PodPath(op->ref, "status"),
                DumpJson(kube::UnschedulablePatch(op->message, FormatTimestamp(UnixMillis()))),
                kube::kStrategicMergePatch},
               [this, op](Result<kube::Response> patched) {
                 if (patched.ok() && patched->status == 404) {
                   return PodGone(op->key);
                 }
                 RecordEvent(op);
               });
}

void UnschedulableWriter::RecordEvent(const std::shared_ptr<Op>& op) {
  // One Event write per pod at a time: a PATCH of the count must not overtake the create it
  // patches (it would find nothing and start a second Event). A repeat meanwhile is skipped.
  if (!Current(*op) || !events_in_flight_.insert(op->key).second) return;
  kube::EventWrite write =
      events_.Record(Involved(op->ref), "Warning", kFailedScheduling, op->message, UnixMillis());
  const bool patch = write.kind == kube::EventWrite::Kind::kPatch;
  kube::Request request{patch ? "PATCH" : "POST", write.path, DumpJson(write.body)};
  if (patch) request.content_type = kube::kStrategicMergePatch;
  client_.Send(request, [this, pod = op->key, key = write.key](Result<kube::Response> answer) {
    events_in_flight_.erase(pod);
    // The Event expired (404) or the write failed: the next one starts a new Event.
    if (!answer.ok() || !answer->ok()) events_.Forget(key);
  });
}

void UnschedulableWriter::DeleteCreated(const kube::ObjectRef& ref) {
  client_.Send({"DELETE", kube::PodPath(ref), DumpJson(kube::DeleteOptionsBody(ref, 0))},
               [](const Result<kube::Response>&) {
                 // Gone already (404) is what we wanted; anything else the informer shows.
               });
}

}  // namespace gpupool::backend
