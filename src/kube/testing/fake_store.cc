#include "kube/testing/fake_store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>

#include "common/clock.h"
#include "kube/kubeconfig.h"

namespace gpupool::kube::fake {
namespace {

std::string Base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// The API server's continue token: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"key\0"}.
std::string EncodeContinue(int64_t revision, const std::string& start) {
  Json token = {{"v", "meta.k8s.io/v1"}, {"rv", revision}, {"start", start + '\0'}};
  return Base64(token.dump());
}

Result<std::pair<int64_t, std::string>> DecodeContinue(const std::string& text) {
  auto decoded = DecodeBase64(text);
  Json token = decoded ? Json::parse(*decoded, nullptr, false) : Json();
  if (!token.is_object() || !token.contains("rv") || !token["rv"].is_number_integer() ||
      !token.contains("start") || !token["start"].is_string()) {
    return InvalidArgumentError("continue key is not valid");
  }
  std::string start = token["start"].get<std::string>();
  if (!start.empty() && start.back() == '\0') start.pop_back();
  return std::make_pair(token["rv"].get<int64_t>(), start);
}

std::string NameOf(const Json& object) {
  const Json& metadata = Field(object, "metadata");
  return metadata.is_object() && metadata.contains("name") && metadata["name"].is_string()
             ? metadata["name"].get<std::string>()
             : "";
}

std::string NamespaceOf(const Json& object) {
  const Json& metadata = Field(object, "metadata");
  return metadata.is_object() && metadata.contains("namespace") && metadata["namespace"].is_string()
             ? metadata["namespace"].get<std::string>()
             : "";
}

// The defaults the API server gives a new pod (the ones a scheduler and a kubelet read).
void DefaultPod(Json& pod) {
  if (!pod["spec"].is_object()) pod["spec"] = Json::object();
  if (!pod["status"].is_object()) pod["status"] = Json::object();
  Json& spec = pod["spec"];
  if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
  if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
  Json& status = pod["status"];
  if (!status.contains("phase")) status["phase"] = "Pending";
}

std::string WatchLine(EventType type, const std::string& object_text) {
  std::string line;
  line.reserve(object_text.size() + 32);
  line += R"({"type":")";
  line += EventTypeName(type);
  line += R"(","object":)";
  line += object_text;
  line += "}\n";
  return line;
}

}  // namespace

const std::vector<ResourceType>& Resources() {
  static const std::vector<ResourceType> kResources = {
      {"", "v1", "nodes", "Node", false, true, false},
      {"", "v1", "pods", "Pod", true, true, false},
      {"", "v1", "events", "Event", true, false, false},
      {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, true, false},
      {"coordination.k8s.io", "v1", "leases", "Lease", true, false, false},
      {"machine.openshift.io", "v1beta1", "machinesets", "MachineSet", true, true, true},
      {"cluster.x-k8s.io", "v1beta1", "machinedeployments", "MachineDeployment", true, true, true},
      {"machine.openshift.io", "v1beta1", "machines", "Machine", true, true, false},
      {"cluster.x-k8s.io", "v1beta1", "machines", "Machine", true, true, false},
  };
  return kResources;
}

int FindResource(std::string_view group, std::string_view version, std::string_view plural) {
  const auto& all = Resources();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].group == group && all[i].version == version && all[i].plural == plural) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int ResourceId(std::string_view name) {
  const auto& all = Resources();
  int by_plural = -1;
  int plural_matches = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].QualifiedName() == name) return static_cast<int>(i);
    if (all[i].plural == name) {
      by_plural = static_cast<int>(i);
      ++plural_matches;
    }
  }
  return plural_matches == 1 ? by_plural : -1;
}

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "";
}

const Json& Field(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string ObjectKey(const ResourceType& type, const std::string& namespace_,
                      const std::string& name) {
  return type.namespaced ? namespace_ + "/" + name : name;
}

bool Filter::Matches(const Json& object) const {
  if (!namespace_.empty() && NamespaceOf(object) != namespace_) return false;
  if (!labels.empty() && !labels.Matches(ObjectLabels(object))) return false;
  return fields.Matches([&](const std::string& path) { return FieldValue(object, path); });
}

LineQueue::LineQueue(std::function<void()> wake, size_t max_backlog)
    : wake_(std::move(wake)), max_backlog_(max_backlog) {}

std::vector<LineQueue::Line> LineQueue::Drain(bool* closed) {
  std::lock_guard lock(mu_);
  *closed = closed_;
  return std::exchange(lines_, {});
}

void LineQueue::Push(Line line) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    // Only the first line after a Drain wakes the writer: it drains all that came meanwhile
    // before it waits again, so one wake (a handler posted to its strand) per write, not per line.
    wake = lines_.empty();
    if (lines_.size() >= max_backlog_) {
      closed_ = true;
      wake = true;
    } else {
      lines_.push_back(std::move(line));
    }
  }
  if (wake) wake_();
}

void LineQueue::Close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  wake_();
}

ObjectStore::ObjectStore(StoreOptions options)
    : options_(std::move(options)), objects_(Resources().size()) {
  uint64_t seed = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&seed), sizeof seed) != 1) {
    seed = static_cast<uint64_t>(std::random_device{}()) << 32 ^ std::random_device{}();
  }
  uid_random_.seed(seed);
}

StoredObject ObjectStore::Seal(Json object) const {
  auto shared = std::make_shared<const Json>(std::move(object));
  return {shared, std::make_shared<const std::string>(shared->dump())};
}

std::string ObjectStore::NewUid() const {
  unsigned char bytes[16];
  for (int half = 0; half < 2; ++half) {
    const uint64_t n = uid_random_();
    for (int i = 0; i < 8; ++i) bytes[half * 8 + i] = static_cast<unsigned char>(n >> (i * 8));
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4, as the API's
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static const char kHex[] = "0123456789abcdef";
  std::string uid;
  uid.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uid += '-';
    uid += kHex[bytes[i] >> 4];
    uid += kHex[bytes[i] & 15];
  }
  return uid;
}

Result<StoredObject> ObjectStore::Create(int resource, const std::string& namespace_, Json object) {
  const ResourceType& type = Resources()[resource];
  if (!object.is_object()) return InvalidArgumentError("the body must be a JSON object");
  // Fields are set before `metadata` is taken: an ordered_json object is a vector, so adding a
  // key would move the value a reference points to.
  object["apiVersion"] = type.ApiVersion();
  object["kind"] = type.kind;
  if (type.kind == "Pod") DefaultPod(object);
  if (!object["metadata"].is_object()) object["metadata"] = Json::object();
  Json& metadata = object["metadata"];
  std::string name = NameOf(object);
  std::lock_guard lock(mu_);
  if (name.empty()) {
    if (!metadata.contains("generateName") || !metadata["generateName"].is_string()) {
      return InvalidArgumentError(
          "metadata.name: Required value: name or generateName is required");
    }
    name = metadata["generateName"].get<std::string>() + NewUid().substr(0, 5);
    metadata["name"] = name;
  }
  if (type.namespaced) {
    std::string given = NamespaceOf(object);
    if (!given.empty() && given != namespace_) {
      return InvalidArgumentError(
          "the namespace of the provided object does not match the "
          "namespace sent on the request");
    }
    metadata["namespace"] = namespace_;
  }
  std::string key = ObjectKey(type, namespace_, name);
  if (objects_[resource].contains(key)) {
    return AlreadyExistsError(type.plural + " \"" + name + "\" already exists");
  }
  metadata["uid"] = NewUid();
  metadata["creationTimestamp"] = FormatTimestamp(options_.now_ms());
  metadata["generation"] = 1;
  metadata.erase("deletionTimestamp");
  metadata["resourceVersion"] = std::to_string(++revision_);
  StoredObject sealed = Seal(std::move(object));
  objects_[resource][key] = sealed;
  PublishLocked({revision_, resource, EventType::kAdded, sealed, nullptr});
  return sealed;
}

Result<StoredObject> ObjectStore::Get(int resource, const std::string& namespace_,
                                      const std::string& name) const {
  const ResourceType& type = Resources()[resource];
  std::lock_guard lock(mu_);
  auto it = objects_[resource].find(ObjectKey(type, namespace_, name));
  if (it == objects_[resource].end()) {
    return NotFoundError(type.plural + " \"" + name + "\" not found");
  }
  return it->second;
}

Result<StoredObject> ObjectStore::Update(int resource, const std::string& namespace_,
                                         const std::string& name,
                                         const std::function<Status(Json&)>& mutate, Edit changes) {
  const ResourceType& type = Resources()[resource];
  std::lock_guard lock(mu_);
  auto it = objects_[resource].find(ObjectKey(type, namespace_, name));
  if (it == objects_[resource].end()) {
    return NotFoundError(type.plural + " \"" + name + "\" not found");
  }
  Json copy = *it->second.object;
  RETURN_IF_ERROR(mutate(copy));
  // Identity fields are the server's.
  Json& metadata = copy["metadata"];
  const Json& before = Field(*it->second.object, "metadata");
  for (const char* field : {"name", "namespace", "uid", "creationTimestamp", "resourceVersion"}) {
    if (before.contains(field)) {
      metadata[field] = before[field];
    } else {
      metadata.erase(field);
    }
  }
  if (changes == Edit::kMayChange && copy == *it->second.object) return it->second;
  metadata["resourceVersion"] = std::to_string(++revision_);
  std::shared_ptr<const Json> previous = it->second.object;
  it->second = Seal(std::move(copy));
  PublishLocked({revision_, resource, EventType::kModified, it->second, previous});
  return it->second;
}

Result<StoredObject> ObjectStore::Remove(int resource, const std::string& namespace_,
                                         const std::string& name, const std::string& uid) {
  const ResourceType& type = Resources()[resource];
  std::lock_guard lock(mu_);
  auto it = objects_[resource].find(ObjectKey(type, namespace_, name));
  if (it == objects_[resource].end()) {
    return NotFoundError(type.plural + " \"" + name + "\" not found");
  }
  const Json& current = *it->second.object;
  const std::string current_uid = Field(Field(current, "metadata"), "uid").is_string()
                                      ? Field(Field(current, "metadata"), "uid").get<std::string>()
                                      : "";
  if (!uid.empty() && current_uid != uid) {
    return AbortedError("Precondition failed: UID in precondition: " + uid +
                        ", UID in object meta: " + current_uid);
  }
  Json last = current;
  last["metadata"]["resourceVersion"] = std::to_string(++revision_);
  std::shared_ptr<const Json> previous = it->second.object;
  StoredObject sealed = Seal(std::move(last));
  objects_[resource].erase(it);
  PublishLocked({revision_, resource, EventType::kDeleted, sealed, previous});
  return sealed;
}

Result<ListPage> ObjectStore::List(const Filter& filter, int64_t limit,
                                   const std::string& continue_token) {
  std::lock_guard lock(mu_);
  ListPage page;
  page.revision = revision_;
  const Objects& objects = objects_[filter.resource];
  auto it = objects.begin();
  if (!continue_token.empty()) {
    ASSIGN_OR_RETURN(auto token, DecodeContinue(continue_token));
    if (token.first < compacted_) {
      return FailedPreconditionError(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter.");
    }
    page.revision = token.first;
    it = objects.lower_bound(token.second);
  } else if (!filter.namespace_.empty()) {
    it = objects.lower_bound(filter.namespace_ + "/");
  }
  for (; it != objects.end(); ++it) {
    if (!filter.namespace_.empty() && !it->first.starts_with(filter.namespace_ + "/")) break;
    if (!filter.Matches(*it->second.object)) continue;
    if (limit > 0 && static_cast<int64_t>(page.items.size()) == limit) {
      page.continue_token = EncodeContinue(page.revision, it->first);
      for (; it != objects.end(); ++it) {
        if (filter.Matches(*it->second.object)) ++page.remaining;
      }
      break;
    }
    page.items.push_back(it->second.text);
  }
  return page;
}

std::vector<std::shared_ptr<const Json>> ObjectStore::Select(
    int resource, const std::function<bool(const Json&)>& pred) const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const Json>> out;
  for (const auto& [key, stored] : objects_[resource]) {
    if (pred(*stored.object)) out.push_back(stored.object);
  }
  return out;
}

Result<std::shared_ptr<Watcher>> ObjectStore::Watch(Filter filter, bool bookmarks,
                                                    std::optional<int64_t> from,
                                                    std::function<void()> wake) {
  std::lock_guard lock(mu_);
  if (from && *from < compacted_) {
    return FailedPreconditionError("too old resource version: " + std::to_string(*from) + " (" +
                                   std::to_string(compacted_ + 1) + ")");
  }
  auto watcher = std::make_shared<Watcher>(std::move(filter), bookmarks, std::move(wake),
                                           options_.max_watch_backlog);
  const Filter& f = watcher->filter();
  if (!from) {
    for (const auto& [key, stored] : objects_[f.resource]) {
      if (f.Matches(*stored.object)) watcher->Push(WatchLine(EventType::kAdded, *stored.text));
    }
  } else {
    auto first = std::upper_bound(history_.begin(), history_.end(), *from,
                                  [](int64_t rv, const Change& c) { return rv < c.revision; });
    std::vector<std::shared_ptr<Watcher>> one = {watcher};
    for (auto it = first; it != history_.end(); ++it) {
      if (it->resource != f.resource) continue;
      bool now = it->type != EventType::kDeleted && f.Matches(*it->object.object);
      bool before = it->previous && f.Matches(*it->previous);
      if (!now && !before) continue;
      EventType type = it->type;
      if (type == EventType::kModified) {
        type = !before ? EventType::kAdded : !now ? EventType::kDeleted : EventType::kModified;
      }
      watcher->Push(WatchLine(type, *it->object.text));
    }
  }
  watchers_.push_back(watcher);
  return watcher;
}

void ObjectStore::Unwatch(const std::shared_ptr<Watcher>& watcher) {
  std::lock_guard lock(mu_);
  std::erase(watchers_, watcher);
}

size_t ObjectStore::CloseAllWatches() {
  std::vector<std::shared_ptr<Watcher>> closing;
  {
    std::lock_guard lock(mu_);
    closing.swap(watchers_);
  }
  for (const auto& watcher : closing) watcher->Close();
  return closing.size();
}

void ObjectStore::SendBookmarks(const std::shared_ptr<Watcher>& watcher) {
  std::lock_guard lock(mu_);
  auto send = [&](Watcher& w) {
    const ResourceType& type = Resources()[w.filter().resource];
    Json bookmark = {{"type", "BOOKMARK"},
                     {"object",
                      {{"kind", type.kind},
                       {"apiVersion", type.ApiVersion()},
                       {"metadata", {{"resourceVersion", std::to_string(revision_)}}}}}};
    w.Push(bookmark.dump() + "\n");
  };
  if (watcher) {
    send(*watcher);
    return;
  }
  for (const auto& w : watchers_) {
    if (w->bookmarks()) send(*w);
  }
}

void ObjectStore::AddObserver(std::function<void(const Change&)> observer) {
  std::lock_guard lock(mu_);
  observers_.push_back(std::move(observer));
}

void ObjectStore::PublishLocked(Change change) {
  // Each event type's line made once, for all the watches it goes to (gpupool's and the
  // benchmark's both watch every pod).
  std::array<LineQueue::Line, 3> lines;
  for (const auto& watcher : watchers_) {
    const Filter& f = watcher->filter();
    if (f.resource != change.resource) continue;
    bool now = change.type != EventType::kDeleted && f.Matches(*change.object.object);
    bool before = change.previous && f.Matches(*change.previous);
    if (!now && !before) continue;
    EventType type = change.type;
    if (type == EventType::kModified) {
      type = !before ? EventType::kAdded : !now ? EventType::kDeleted : EventType::kModified;
    }
    LineQueue::Line& line = lines[static_cast<size_t>(type)];
    if (line == nullptr) {
      line = std::make_shared<const std::string>(WatchLine(type, *change.object.text));
    }
    watcher->Push(line);
  }
  for (const auto& observer : observers_) observer(change);
  history_.push_back(std::move(change));
  while (history_.size() > options_.history_limit) {
    compacted_ = history_.front().revision;
    history_.pop_front();
  }
}

int64_t ObjectStore::Compact() {
  std::lock_guard lock(mu_);
  history_.clear();
  compacted_ = revision_;
  return revision_;
}

int64_t ObjectStore::Revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

int64_t ObjectStore::CompactedRevision() const {
  std::lock_guard lock(mu_);
  return compacted_;
}

Json ObjectStore::Dump() const {
  std::lock_guard lock(mu_);
  Json dump = {{"revision", revision_}, {"objects", Json::object()}};
  for (size_t r = 0; r < objects_.size(); ++r) {
    Json& items = dump["objects"][Resources()[r].QualifiedName()];
    items = Json::array();
    for (const auto& [key, stored] : objects_[r]) items.push_back(*stored.object);
  }
  return dump;
}

Status ObjectStore::Load(const Json& dump) {
  if (!dump.is_object() || !dump.contains("revision") || !dump["revision"].is_number_integer() ||
      !dump.contains("objects") || !dump["objects"].is_object()) {
    return InvalidArgumentError("state file: expected {revision, objects}");
  }
  std::lock_guard lock(mu_);
  for (const auto& [name, items] : dump["objects"].items()) {
    int r = ResourceId(name);
    if (r < 0 || !items.is_array()) return InvalidArgumentError("state file: objects." + name);
    for (const Json& object : items) {
      std::string key = ObjectKey(Resources()[r], NamespaceOf(object), NameOf(object));
      objects_[r][key] = Seal(object);
    }
  }
  revision_ = dump["revision"].get<int64_t>();
  // A restarted server keeps no watch history: every earlier revision is too old.
  compacted_ = revision_;
  history_.clear();
  return OkStatus();
}

}  // namespace gpupool::kube::fake
