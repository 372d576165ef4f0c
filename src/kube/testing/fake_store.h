#pragma once
// The fake API server's object store: etcd and the watch cache in one, in memory.
//
// One revision counter for every resource, as etcd has: each change (create, update, delete)
// takes the next revision, which becomes the object's metadata.resourceVersion and the version
// of lists and watch events. The last `history_limit` changes are kept, so that a watch can
// start from any revision at or after the oldest kept one; a revision older than that (or than
// a Compact()) is "too old" and the caller answers 410 Gone, as the real server does once etcd
// has compacted it (about five minutes of history there).
//
// Watches see events in revision order, filtered by namespace and selectors with the API
// server's transitions: an object that starts matching a watch's selector arrives as ADDED, one
// that stops matching as DELETED. Lists are in key order (namespace/name), paged with `limit`
// and an opaque `continue` token that carries the list's revision and the next key; a token
// whose revision was compacted is 410 Gone. (Pages after the first are read from the current
// objects, not from a snapshot at the list's revision as etcd would.)
//
// Thread contract: every method is safe from any thread (one mutex). Watchers and observers are
// called with that mutex held: they must only queue work and return.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/selector.h"

namespace gpupool::kube::fake {

using Json = nlohmann::ordered_json;

struct ResourceType {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;
  bool status_subresource = true;  // writes to the object keep its status, and /status the rest
  bool scale_subresource = false;  // spec.replicas through /scale

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "plural.group" as kubectl names a resource ("machines.cluster.x-k8s.io"); the plural alone
  // for the core group.
  std::string QualifiedName() const { return group.empty() ? plural : plural + "." + group; }
};

// The resources the fake serves (index = resource id).
const std::vector<ResourceType>& Resources();
int FindResource(std::string_view group, std::string_view version, std::string_view plural);
// By qualified name, or by plural alone when only one group serves it ("pods", but not
// "machines", which two groups serve). -1 when unknown or ambiguous.
int ResourceId(std::string_view name);

struct StoredObject {
  std::shared_ptr<const Json> object;
  std::shared_ptr<const std::string> text;  // `object` serialized once, shared by every reader
};

enum class EventType { kAdded, kModified, kDeleted };
std::string_view EventTypeName(EventType type);

struct Change {
  int64_t revision = 0;
  int resource = 0;
  EventType type = EventType::kAdded;
  StoredObject object;                   // after the change (DELETED: the last state)
  std::shared_ptr<const Json> previous;  // before the change; null for ADDED
};

// What a watch or list selects.
struct Filter {
  int resource = 0;
  std::string namespace_;  // "" = all namespaces
  LabelSelector labels;
  FieldSelector fields;

  bool Matches(const Json& object) const;
};

// A queue of lines for one open stream (a watch, or a followed log). The producer appends lines;
// the server drains them, woken through `wake` (which must not block). A line is shared: one
// change's watch event is the same text for every watch that selects it.
class LineQueue {
 public:
  using Line = std::shared_ptr<const std::string>;

  LineQueue(std::function<void()> wake, size_t max_backlog);
  virtual ~LineQueue() = default;

  // Takes every queued line; `closed` is set once the producer has closed the stream.
  std::vector<Line> Drain(bool* closed);
  // A queue that falls `max_backlog` lines behind is closed, as the API server drops a watcher
  // that cannot keep up.
  void Push(Line line);
  void Push(std::string line) { Push(std::make_shared<const std::string>(std::move(line))); }
  void Close();

 private:
  const std::function<void()> wake_;
  const size_t max_backlog_;
  std::mutex mu_;
  std::vector<Line> lines_;
  bool closed_ = false;
};

// One open watch: a JSON line per change it selects ({"type": ..., "object": ...}).
class Watcher final : public LineQueue {
 public:
  Watcher(Filter filter, bool bookmarks, std::function<void()> wake, size_t max_backlog)
      : LineQueue(std::move(wake), max_backlog),
        filter_(std::move(filter)),
        bookmarks_(bookmarks) {}

  const Filter& filter() const { return filter_; }
  bool bookmarks() const { return bookmarks_; }  // allowWatchBookmarks=true

 private:
  const Filter filter_;
  const bool bookmarks_;
};

struct ListPage {
  std::vector<std::shared_ptr<const std::string>> items;
  int64_t revision = 0;
  std::string continue_token;  // "" on the last page
  int64_t remaining = 0;       // items after this page
};

struct StoreOptions {
  size_t history_limit = 100000;  // changes kept for watches
  size_t max_watch_backlog = 200000;
  std::function<int64_t()> now_ms;  // wall clock for timestamps
};

class ObjectStore {
 public:
  explicit ObjectStore(StoreOptions options);

  // Creates an object (metadata.name, or generateName). Sets uid, resourceVersion,
  // creationTimestamp, generation; pods get their API defaults (schedulerName, phase Pending,
  // restartPolicy, terminationGracePeriodSeconds). kAlreadyExists when the name is taken.
  Result<StoredObject> Create(int resource, const std::string& namespace_, Json object);
  Result<StoredObject> Get(int resource, const std::string& namespace_,
                           const std::string& name) const;
  // Read-modify-write under the store's lock: `mutate` edits a copy; an error leaves the object
  // as it was; an edit that changes nothing takes no revision and sends no event. `changes`: the
  // caller knows a successful `mutate` always changes the object (a binding sets spec.nodeName
  // where there was none), so the comparison with the stored object is skipped.
  enum class Edit { kMayChange, kChanges };
  Result<StoredObject> Update(int resource, const std::string& namespace_, const std::string& name,
                              const std::function<Status(Json&)>& mutate,
                              Edit changes = Edit::kMayChange);
  // Removes the object now (DELETED event). `uid`, when not empty, must match (else kAborted).
  Result<StoredObject> Remove(int resource, const std::string& namespace_, const std::string& name,
                              const std::string& uid = "");

  // Lists matching objects. `limit` 0 = all. A bad or compacted continue token: kInvalidArgument
  // or kFailedPrecondition (the caller answers 400 or 410).
  Result<ListPage> List(const Filter& filter, int64_t limit, const std::string& continue_token);
  // Every object of a resource matching `pred`, under the lock (for PDBs and the kubelet).
  std::vector<std::shared_ptr<const Json>> Select(
      int resource, const std::function<bool(const Json&)>& pred) const;

  // Opens a watch. `from`: nullopt = the current objects as ADDED events first, then changes;
  // a revision = the kept changes after it, then changes. kFailedPrecondition when `from` is
  // older than the history kept ("too old resource version").
  Result<std::shared_ptr<Watcher>> Watch(Filter filter, bool bookmarks, std::optional<int64_t> from,
                                         std::function<void()> wake);
  void Unwatch(const std::shared_ptr<Watcher>& watcher);
  // Closes every open watch mid-stream; returns how many.
  size_t CloseAllWatches();
  // Sends a BOOKMARK at the current revision to `watcher`, or (null) to every watch that asked
  // for bookmarks. Under the lock, so a bookmark never overtakes a change it covers.
  void SendBookmarks(const std::shared_ptr<Watcher>& watcher = nullptr);

  // Called for every change, with the lock held (the fake kubelet listens here).
  void AddObserver(std::function<void(const Change&)> observer);

  // Forgets all history: any earlier revision is now too old. Returns the revision.
  int64_t Compact();
  int64_t Revision() const;
  int64_t CompactedRevision() const;

  // Every object and the revision, for a restart that keeps the cluster's state.
  Json Dump() const;
  Status Load(const Json& dump);

 private:
  using Objects = std::map<std::string, StoredObject>;  // by "namespace/name" or "name"

  void PublishLocked(Change change);
  StoredObject Seal(Json object) const;
  std::string NewUid() const;

  const StoreOptions options_;
  mutable std::mutex mu_;
  int64_t revision_ = 0;
  int64_t compacted_ = 0;  // changes at or before this revision are forgotten
  std::vector<Objects> objects_;
  std::deque<Change> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  std::vector<std::function<void(const Change&)>> observers_;
  // UIDs under mu_: a PRNG seeded once from OpenSSL's, since RAND_bytes per object (its locks
  // and reseeding checks) was 4 % of the fake's CPU at thousands of pods per second.
  mutable std::mt19937_64 uid_random_;
};

// `object[key]` for reading: a null when `object` is not an object or lacks the key (the const
// operator[] of nlohmann::json must not be given a missing key).
const Json& Field(const Json& object, const char* key);

// "namespace/name" (or "name" for cluster-scoped resources).
std::string ObjectKey(const ResourceType& type, const std::string& namespace_,
                      const std::string& name);

}  // namespace gpupool::kube::fake
