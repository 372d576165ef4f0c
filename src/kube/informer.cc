#include "kube/informer.h"

#include <algorithm>
#include <future>
#include <random>

#include "kube/json_read.h"
#include "kube/writes.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

std::string WithQuery(const std::string& path, const std::vector<std::string>& params) {
  std::string out = path;
  char sep = path.find('?') == std::string::npos ? '?' : '&';
  for (const std::string& p : params) {
    out += sep;
    out += p;
    sep = '&';
  }
  return out;
}

// The SAX side of KeepFieldsDecoder: follows the path of objects (arrays are skipped whole) and
// copies the scalars at the kept paths into a small tree.
class KeptFields final : public nlohmann::json_sax<Json> {
 public:
  explicit KeptFields(const std::vector<std::string>& kept) : kept_(kept) {}
  Json TakeResult() { return std::move(result_); }

  bool null() override { return Keep(nullptr); }
  bool boolean(bool value) override { return Keep(value); }
  bool number_integer(number_integer_t value) override { return Keep(value); }
  bool number_unsigned(number_unsigned_t value) override { return Keep(value); }
  bool number_float(number_float_t value, const string_t&) override { return Keep(value); }
  bool string(string_t& value) override { return Keep(std::move(value)); }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (arrays_ == 0 && depth_++ > 0) Push();
    return true;
  }
  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }
  bool end_object() override {
    if (arrays_ == 0 && --depth_ > 0) Pop();
    return true;
  }
  bool start_array(std::size_t) override {
    ++arrays_;
    return true;
  }
  bool end_array() override {
    --arrays_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  void Push() {
    lengths_.push_back(path_.size());
    if (!path_.empty()) path_ += '.';
    path_ += key_;
  }
  void Pop() {
    path_.resize(lengths_.back());
    lengths_.pop_back();
  }
  template <typename Value>
  bool Keep(Value&& value) {
    if (arrays_ > 0) return true;
    const size_t length = path_.size();
    if (!path_.empty()) path_ += '.';
    path_ += key_;
    if (std::find(kept_.begin(), kept_.end(), path_) != kept_.end()) {
      result_[Json::json_pointer("/" + ReplaceDots(path_))] = std::forward<Value>(value);
    }
    path_.resize(length);
    return true;
  }
  static std::string ReplaceDots(std::string path) {
    std::replace(path.begin(), path.end(), '.', '/');
    return path;
  }

  const std::vector<std::string>& kept_;
  Json result_ = Json::object();
  std::string path_;  // of the current object, dotted, from the line's top level
  std::vector<size_t> lengths_;
  std::string key_;
  int depth_ = 0;
  int arrays_ = 0;
};

}  // namespace

EventDecoder KeepFieldsDecoder(const std::vector<std::string>& fields) {
  std::vector<std::string> kept = {"type", "object.metadata.name", "object.metadata.namespace",
                                   "object.metadata.resourceVersion", "object.code"};
  for (const std::string& field : fields) kept.push_back("object." + field);
  return [kept = std::move(kept)](std::string_view line) {
    KeptFields sax(kept);
    if (!Json::sax_parse(line, &sax)) return Json(Json::value_t::discarded);
    Json event = sax.TakeResult();
    // An ERROR's object or an object with none of the fields is still an object.
    if (event.contains("type") && !event.contains("object")) event["object"] = Json::object();
    return event;
  };
}

std::string ObjectKeyOf(const Json& object) {
  std::string ns = MetadataString(object, "namespace");
  std::string name = MetadataString(object, "name");
  return ns.empty() ? name : ns + "/" + name;
}

// Everything below runs on the client's I/O thread, except the cache readers (under `mu`).
struct Informer::State : std::enable_shared_from_this<State> {
  State(Client& c, InformerOptions o, InformerHandlers h)
      : client(c),
        options(std::move(o)),
        handlers(std::move(h)),
        backoff(options.backoff, options.seed),
        random(options.seed ^ 0x9e3779b97f4a7c15ULL) {}

  void StartList(const std::string& continue_token);
  void Relist() { StartList(""); }
  void OnListPage(Result<Response> result);
  void ApplyList();
  void StartWatch();
  void OnWatchData(std::string_view data);
  void OnWatchEnd(const Status& status);
  void HandleEvent(std::string_view line);
  void Upsert(Json object);
  void Remove(Json object);
  void Retry(void (State::*step)(), const std::string& error);
  void SetVersion(const std::string& version);
  std::string LastVersionLocked() const {
    std::lock_guard lock(mu);
    return last_version;
  }
  std::vector<std::string> SelectorParams() const;
  template <typename Field>
  void Bump(Field InformerStats::*field) {
    std::lock_guard lock(mu);
    ++(stats.*field);
  }

  Client& client;
  const InformerOptions options;
  const InformerHandlers handlers;
  Backoff backoff;
  std::mt19937_64 random;

  bool running = false;  // I/O thread
  uint64_t run = 0;      // incremented by Start and Stop: late answers of an older run are dropped
  std::unique_ptr<Stream> stream;
  std::string pending_line;
  bool watch_expired = false;
  std::map<std::string, ObjectPtr> listed;
  std::string list_version;

  mutable std::mutex mu;
  mutable std::condition_variable synced_cv;
  std::map<std::string, ObjectPtr> cache;
  std::string last_version;
  bool synced = false;
  InformerStats stats;
};

std::vector<std::string> Informer::State::SelectorParams() const {
  std::vector<std::string> params;
  if (!options.label_selector.empty()) {
    params.push_back("labelSelector=" + QueryEscape(options.label_selector));
  }
  if (!options.field_selector.empty()) {
    params.push_back("fieldSelector=" + QueryEscape(options.field_selector));
  }
  return params;
}

void Informer::State::SetVersion(const std::string& version) {
  if (version.empty()) return;
  std::lock_guard lock(mu);
  last_version = version;
}

void Informer::State::Retry(void (State::*step)(), const std::string& error) {
  {
    std::lock_guard lock(mu);
    ++stats.failures;
    stats.last_error = error;
  }
  auto self = shared_from_this();
  uint64_t this_run = run;
  client.After(backoff.Next(), [self, this_run, step] {
    if (self->running && self->run == this_run) ((*self).*step)();
  });
}

void Informer::State::StartList(const std::string& continue_token) {
  if (continue_token.empty()) {
    listed.clear();
    list_version.clear();
  }
  std::vector<std::string> params = SelectorParams();
  params.push_back("limit=" + std::to_string(options.page_size));
  if (!continue_token.empty()) params.push_back("continue=" + QueryEscape(continue_token));
  Bump(&InformerStats::list_pages);
  auto self = shared_from_this();
  uint64_t this_run = run;
  client.Send({"GET", WithQuery(options.path, params), "", ""},
              [self, this_run](Result<Response> result) {
                if (self->running && self->run == this_run) self->OnListPage(std::move(result));
              });
}

void Informer::State::OnListPage(Result<Response> result) {
  if (result.ok() && result->status == 410) {  // the continue token expired: start again
    Bump(&InformerStats::expired);
    return Relist();
  }
  if (!result.ok()) return Retry(&State::Relist, result.status().message());
  if (!result->ok()) return Retry(&State::Relist, ApiError(*result, "list").message());
  Json body = result->Json();
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
    return Retry(&State::Relist, "list " + options.path + ": the answer is not a list");
  }
  for (Json& item : body["items"]) {
    std::string key = ObjectKeyOf(item);
    listed[key] = std::make_shared<const Json>(std::move(item));
  }
  const Json& metadata = body["metadata"];
  list_version = metadata.is_object() ? metadata.value("resourceVersion", "") : "";
  std::string next = metadata.is_object() ? metadata.value("continue", "") : "";
  if (!next.empty()) return StartList(next);
  ApplyList();
}

// Replaces the cache by the list, then tells the handlers what changed (outside the lock, so
// they may read the cache).
void Informer::State::ApplyList() {
  std::vector<ObjectPtr> deleted, added;
  std::vector<std::pair<ObjectPtr, ObjectPtr>> updated;
  {
    std::lock_guard lock(mu);
    for (const auto& [key, old] : cache) {
      if (!listed.contains(key)) deleted.push_back(old);
    }
    for (const auto& [key, object] : listed) {
      auto it = cache.find(key);
      if (it == cache.end()) {
        added.push_back(object);
      } else if (MetadataString(*it->second, "resourceVersion") !=
                 MetadataString(*object, "resourceVersion")) {
        updated.emplace_back(it->second, object);
      }
    }
    cache = std::move(listed);
    listed.clear();
    last_version = list_version;
    synced = true;
    ++stats.lists;
  }
  synced_cv.notify_all();
  backoff.Reset();
  for (const auto& object : deleted) {
    if (handlers.on_delete) handlers.on_delete(object);
  }
  for (const auto& [old, object] : updated) {
    if (handlers.on_update) handlers.on_update(old, object);
  }
  for (const auto& object : added) {
    if (handlers.on_add) handlers.on_add(object);
  }
  if (handlers.on_synced) handlers.on_synced();
  StartWatch();
}

void Informer::State::StartWatch() {
  std::vector<std::string> params = SelectorParams();
  params.emplace_back("watch=true");
  params.push_back("resourceVersion=" + QueryEscape(LastVersionLocked()));
  if (options.bookmarks) params.emplace_back("allowWatchBookmarks=true");
  auto min = options.min_watch_timeout.count();
  std::uniform_int_distribution<int64_t> spread(0, std::max<int64_t>(min, 1) - 1);
  int64_t timeout = min + spread(random);
  params.push_back("timeoutSeconds=" + std::to_string(timeout));
  Bump(&InformerStats::watches);
  watch_expired = false;
  pending_line.clear();
  auto self = shared_from_this();
  uint64_t this_run = run;
  StreamHandlers stream_handlers;
  stream_handlers.on_data = [self, this_run](std::string_view data) {
    if (self->running && self->run == this_run) self->OnWatchData(data);
  };
  stream_handlers.on_end = [self, this_run](const Status& status) {
    if (self->running && self->run == this_run) self->OnWatchEnd(status);
  };
  stream = client.Open({"GET", WithQuery(options.path, params), "", ""}, std::move(stream_handlers),
                       std::chrono::seconds(timeout + 60));
}

void Informer::State::OnWatchData(std::string_view data) {
  pending_line.append(data);
  size_t start = 0;
  for (size_t end; (end = pending_line.find('\n', start)) != std::string::npos; start = end + 1) {
    if (watch_expired) break;
    HandleEvent(std::string_view(pending_line).substr(start, end - start));
  }
  pending_line.erase(0, start);
}

void Informer::State::HandleEvent(std::string_view line) {
  Json event = options.decode ? options.decode(line) : ReadJson(line);
  if (!event.is_object() || !event.contains("type") || !event["type"].is_string() ||
      !event.contains("object") || !event["object"].is_object()) {
    return;  // not an event: skip the line, as client-go skips what it cannot decode
  }
  const std::string type = event["type"].get<std::string>();
  // Moved out, not copied: the cache keeps it, and a deep copy of every pod of every event was a
  // parse's cost again.
  Json object = std::move(event["object"]);
  if (type == "ERROR") {
    watch_expired = object.value("code", 0) == 410;
    Bump(watch_expired ? &InformerStats::expired : &InformerStats::failures);
    stream.reset();
    if (watch_expired) return Relist();
    auto self = shared_from_this();
    uint64_t this_run = run;
    client.After(backoff.Next(), [self, this_run] {
      if (self->running && self->run == this_run) self->StartWatch();
    });
    return;
  }
  backoff.Reset();
  if (type == "BOOKMARK") {
    Bump(&InformerStats::bookmarks);
    return SetVersion(MetadataString(object, "resourceVersion"));
  }
  Bump(&InformerStats::events);
  if (type == "ADDED" || type == "MODIFIED") return Upsert(std::move(object));
  if (type == "DELETED") return Remove(std::move(object));
}

void Informer::State::Upsert(Json object) {
  auto now = std::make_shared<const Json>(std::move(object));
  std::string key = ObjectKeyOf(*now);
  ObjectPtr old;
  {
    std::lock_guard lock(mu);
    auto [it, inserted] = cache.try_emplace(key, now);
    if (!inserted) old = std::exchange(it->second, now);
    std::string version = MetadataString(*now, "resourceVersion");
    if (!version.empty()) last_version = version;
  }
  if (old) {
    if (handlers.on_update) handlers.on_update(old, now);
  } else if (handlers.on_add) {
    handlers.on_add(now);
  }
}

void Informer::State::Remove(Json object) {
  auto last = std::make_shared<const Json>(std::move(object));
  bool known;
  {
    std::lock_guard lock(mu);
    known = cache.erase(ObjectKeyOf(*last)) > 0;
    std::string version = MetadataString(*last, "resourceVersion");
    if (!version.empty()) last_version = version;
  }
  if (known && handlers.on_delete) handlers.on_delete(last);
}

void Informer::State::OnWatchEnd(const Status& status) {
  stream.reset();
  if (watch_expired) return;                               // already relisting
  if (status.code() == StatusCode::kFailedPrecondition) {  // 410 on the request itself
    Bump(&InformerStats::expired);
    return Relist();
  }
  Bump(&InformerStats::resumed);
  if (status.ok()) return StartWatch();  // the watch's timeout: carry on from the last version
  Retry(&State::StartWatch, status.message());
}

// ---- Informer ------------------------------------------------------------------------------

Informer::Informer(Client& client, InformerOptions options, InformerHandlers handlers)
    : state_(std::make_shared<State>(client, std::move(options), std::move(handlers))) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  auto state = state_;
  state->client.Post([state] {
    if (state->running) return;
    state->running = true;
    ++state->run;
    state->Relist();
  });
}

void Informer::Stop() {
  auto state = state_;
  auto stop = [state] {
    state->running = false;
    ++state->run;
    state->stream.reset();
  };
  if (state->client.OnIoThread()) return stop();
  std::promise<void> done;
  state->client.Post([&] {
    stop();
    done.set_value();
  });
  done.get_future().wait();
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mu);
  return state_->synced_cv.wait_for(lock, timeout, [this] { return state_->synced; });
}

bool Informer::Synced() const {
  std::lock_guard lock(state_->mu);
  return state_->synced;
}

ObjectPtr Informer::Get(const std::string& key) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->cache.find(key);
  return it == state_->cache.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Informer::List() const {
  std::lock_guard lock(state_->mu);
  std::vector<ObjectPtr> out;
  out.reserve(state_->cache.size());
  for (const auto& [key, object] : state_->cache) out.push_back(object);
  return out;
}

std::string Informer::LastResourceVersion() const {
  std::lock_guard lock(state_->mu);
  return state_->last_version;
}

InformerStats Informer::Stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

}  // namespace gpupool::kube
