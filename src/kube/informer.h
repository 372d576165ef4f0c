#pragma once
// Informer: a local copy of one kind of object, kept by list + watch as client-go's reflector
// and informer keep theirs (Kubernetes API concepts, "efficient detection of changes"):
//   1. List in pages (`limit`, `continue`); the list's metadata.resourceVersion is where the
//      watch starts. The copy is replaced by the list: objects missing from it are deleted,
//      changed ones updated, new ones added (each with its callback).
//   2. Watch from that version with allowWatchBookmarks=true and a timeoutSeconds drawn from
//      [min_watch_timeout, 2 x min_watch_timeout). Every event and BOOKMARK moves the last
//      version seen.
//   3. A watch that ends (its timeout, the server closing it, a cut connection, the server
//      restarting) resumes from the last version seen: no relist, nothing missed. Connection
//      failures back off (BackoffPolicy, with jitter) before the next try.
//   4. 410 Gone (an ERROR event holding a Status of code 410, or a 410 answer), for a version
//      the server no longer keeps: relist, then watch from the new list's version. A continue
//      token that expired mid-list restarts the list.
// Callbacks run on the client's I/O thread in the order of the server's events and must not
// block. Objects are keyed "namespace/name" (or "name").
//
// Thread contract: Start/Stop from one owner thread (not the client's I/O thread); the cache
// (Get, List, LastResourceVersion, Synced, Stats) is readable from any thread. Stop() returns
// once no callback runs and none will; call it before destroying the client.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/flow_control.h"

namespace gpupool::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::ordered_json>;

// How a watch line becomes an event ({"type": ..., "object": ...}); a discarded Json when it is
// not one. Default (empty): the whole line parsed.
using EventDecoder = std::function<nlohmann::ordered_json(std::string_view line)>;

// A decoder that keeps only the event's type and these fields of its object (dotted paths to
// strings, numbers or booleans outside arrays, e.g. "spec.nodeName"), besides what the informer
// itself reads: metadata.name, metadata.namespace, metadata.resourceVersion and an ERROR's code.
// A streaming (SAX) read that builds no tree of the rest: about a third of a full parse's CPU,
// for a watcher that needs a field or two of every pod (the benchmark's client).
EventDecoder KeepFieldsDecoder(const std::vector<std::string>& fields);

struct InformerOptions {
  std::string path;  // the collection, e.g. /api/v1/pods
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  bool bookmarks = true;
  std::chrono::seconds min_watch_timeout{300};  // client-go's 5 minutes
  BackoffPolicy backoff;
  uint64_t seed = 1;  // for the watch timeouts and the backoff's jitter
  // Watch events only (lists are parsed whole): the cache then holds what it keeps.
  EventDecoder decode;
};

struct InformerHandlers {
  std::function<void(const ObjectPtr&)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& object)> on_update;
  std::function<void(const ObjectPtr&)> on_delete;
  // After each complete list has been applied (the first one: the cache is synced).
  std::function<void()> on_synced;
};

struct InformerStats {
  int64_t lists = 0;       // complete lists
  int64_t list_pages = 0;  // pages requested
  int64_t watches = 0;     // watch requests
  int64_t events = 0;      // ADDED, MODIFIED, DELETED
  int64_t bookmarks = 0;
  int64_t expired = 0;     // 410 Gone (watch or continue): relists
  int64_t resumed = 0;     // watches restarted from the last version after an end or a cut
  int64_t failures = 0;    // failed lists or watches (before backing off)
  std::string last_error;  // of the last failure
};

class Informer {
 public:
  Informer(Client& client, InformerOptions options, InformerHandlers handlers = {});
  ~Informer();

  void Start();
  void Stop();

  // Waits until the first list is applied; false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  bool Synced() const;

  ObjectPtr Get(const std::string& key) const;  // nullptr when absent
  std::vector<ObjectPtr> List() const;          // in key order
  std::string LastResourceVersion() const;
  InformerStats Stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// "namespace/name", or "name" for an object without a namespace.
std::string ObjectKeyOf(const nlohmann::ordered_json& object);

}  // namespace gpupool::kube
