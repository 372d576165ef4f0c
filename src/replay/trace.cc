#include "replay/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "codec/json_reader.h"
#include "common/strings.h"
#include "model/input_file.h"

namespace gpupool::replay {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr double kGiB = 1073741824.0;

// "file:line: ".
std::string Where(std::string_view file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": ";
}

Status ColumnError(const std::string& where, std::string_view column, std::string_view expected,
                   std::string_view got) {
  return InvalidArgumentError(where + "column " + std::string(column) + ": expected " +
                              std::string(expected) + ", got \"" + std::string(got) + "\"");
}

Result<double> ParseNumber(std::string_view text, std::string_view column,
                           const std::string& where) {
  std::string_view t = Trim(text);
  double value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(value) ||
      value < 0) {
    return ColumnError(where, column, "a non-negative number", text);
  }
  return value;
}

Result<int64_t> ParseInteger(std::string_view text, std::string_view column,
                             const std::string& where, int64_t min_value = 0) {
  std::string_view t = Trim(text);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || value < min_value) {
    return ColumnError(where, column,
                       min_value == 0 ? "a non-negative integer"
                                      : "an integer of at least " + std::to_string(min_value),
                       text);
  }
  return value;
}

// Seconds (a number, fractions allowed) to milliseconds.
Result<int64_t> ParseSecondsMs(std::string_view text, std::string_view column,
                               const std::string& where) {
  ASSIGN_OR_RETURN(double seconds, ParseNumber(text, column, where));
  if (seconds > 9.0e12) return ColumnError(where, column, "seconds below 9e12", text);
  return static_cast<int64_t>(std::llround(seconds * 1000.0));
}

Result<model::Quantity> ParseQuantity(std::string_view text, std::string_view column,
                                      const std::string& where) {
  Result<model::Quantity> q = model::Quantity::Parse(Trim(text));
  if (!q.ok() || q->MilliValue() < 0) {
    return ColumnError(where, column, "a Kubernetes quantity such as 4, 500m or 16Gi", text);
  }
  return *q;
}

// GPUs per pod: a whole number, or a fraction below 1 of one GPU.
Status ParseGpus(std::string_view text, const std::string& where, TraceJob& job) {
  ASSIGN_OR_RETURN(double gpus, ParseNumber(text, "gpu", where));
  if (gpus > 0 && gpus < 1) {
    job.gpu_milli = static_cast<int32_t>(std::llround(gpus * 1000));
    if (job.gpu_milli <= 0 || job.gpu_milli >= 1000) {
      return ColumnError(where, "gpu", "a fraction of at least 0.001", text);
    }
    return OkStatus();
  }
  if (gpus != std::floor(gpus) || gpus > 1024) {
    return ColumnError(where, "gpu", "a whole number of GPUs (up to 1024) or a fraction below 1",
                       text);
  }
  job.gpus = static_cast<int>(gpus);
  return OkStatus();
}

std::vector<std::string> SplitList(std::string_view text, char separator) {
  std::vector<std::string> out;
  for (const std::string& part : Split(text, separator)) {
    std::string_view t = Trim(part);
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

struct Lines {
  std::string_view text;
  size_t pos = 0;
  int number = 0;
  // Next line without its end of line; false at the end.
  bool Next(std::string_view& line) {
    if (pos >= text.size()) return false;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    ++number;
    return true;
  }
};

// A CSV file's header: column name -> index.
class Header {
 public:
  Header(std::vector<std::string> names) : names_(std::move(names)) {
    for (size_t i = 0; i < names_.size(); ++i) index_[std::string(Trim(names_[i]))] = i;
  }
  std::optional<size_t> Find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Reads the rows of a CSV text after its header. `row` gets the fields of each non-empty line.
template <typename RowFn>
Result<Header> ForEachCsvRow(std::string_view text, std::string_view file, RowFn row) {
  Lines lines{text};
  std::string_view line;
  std::optional<Header> header;
  while (lines.Next(line)) {
    if (Trim(line).empty()) continue;
    Result<std::vector<std::string>> fields = SplitCsvLine(line);
    if (!fields.ok()) {
      return InvalidArgumentError(Where(file, lines.number) + fields.status().message());
    }
    if (!header) {
      header.emplace(std::move(*fields));
      continue;
    }
    if (fields->size() != header->names().size()) {
      return InvalidArgumentError(Where(file, lines.number) + "expected " +
                                  std::to_string(header->names().size()) + " fields, got " +
                                  std::to_string(fields->size()));
    }
    RETURN_IF_ERROR(row(*fields, lines.number));
  }
  if (!header) return InvalidArgumentError(std::string(file) + ": empty trace (no header)");
  return *header;
}

std::string Field(const std::vector<std::string>& fields, const Header& header,
                  std::string_view column) {
  std::optional<size_t> i = header.Find(column);
  return i ? std::string(Trim(fields[*i])) : std::string();
}

// ---- openb ----

Result<std::vector<TraceJob>> ParseOpenb(std::string_view text, std::string_view file) {
  std::vector<TraceJob> jobs;
  // The header is read first so that rows can be decoded by column name.
  Lines lines{text};
  std::string_view first;
  while (lines.Next(first) && Trim(first).empty()) {
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SplitCsvLine(first));
  const Header header(names);
  for (const char* required : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}) {
    if (!header.Find(required)) {
      return InvalidArgumentError(std::string(file) + ":1: openb pod CSV without column " +
                                  required);
    }
  }
  const bool timed = header.Find("creation_time") && header.Find("deletion_time");
  auto decode = [&](const std::vector<std::string>& f, int line) -> Status {
    const std::string where = Where(file, line);
    TraceJob job;
    job.line = line;
    job.name = Field(f, header, "name");
    if (job.name.empty()) return InvalidArgumentError(where + "column name: required");
    ASSIGN_OR_RETURN(int64_t cpu, ParseInteger(Field(f, header, "cpu_milli"), "cpu_milli", where));
    ASSIGN_OR_RETURN(int64_t mib,
                     ParseInteger(Field(f, header, "memory_mib"), "memory_mib", where));
    ASSIGN_OR_RETURN(int64_t num_gpu, ParseInteger(Field(f, header, "num_gpu"), "num_gpu", where));
    ASSIGN_OR_RETURN(int64_t milli,
                     ParseInteger(Field(f, header, "gpu_milli"), "gpu_milli", where));
    job.requests["cpu"] = model::Quantity::FromMilli(cpu);
    job.requests["memory"] =
        model::Quantity::FromUnits(mib * kMiB, model::QuantityFormat::kBinarySI);
    if (num_gpu == 1 && milli > 0 && milli < 1000) {
      job.gpu_milli = static_cast<int32_t>(milli);
    } else {
      job.gpus = static_cast<int>(std::min<int64_t>(num_gpu, 1024));
    }
    for (const std::string& m : SplitList(Field(f, header, "gpu_spec"), '|')) {
      job.gpu_products.push_back("NVIDIA-" + m);
    }
    if (std::string qos = Field(f, header, "qos"); !qos.empty()) job.labels["qos"] = qos;
    if (timed) {
      ASSIGN_OR_RETURN(job.submit_ms,
                       ParseSecondsMs(Field(f, header, "creation_time"), "creation_time", where));
      ASSIGN_OR_RETURN(int64_t deleted,
                       ParseSecondsMs(Field(f, header, "deletion_time"), "deletion_time", where));
      int64_t started = job.submit_ms;
      if (std::string s = Field(f, header, "scheduled_time"); !s.empty()) {
        ASSIGN_OR_RETURN(started, ParseSecondsMs(s, "scheduled_time", where));
      }
      job.duration_ms = std::max<int64_t>(0, deleted - std::max(started, job.submit_ms));
    }
    jobs.push_back(std::move(job));
    return OkStatus();
  };
  RETURN_IF_ERROR(ForEachCsvRow(text, file, decode).status());
  return jobs;
}

// ---- dlrm ----

Result<std::vector<TraceJob>> ParseDlrm(std::string_view text, std::string_view file) {
  std::vector<TraceJob> jobs;
  std::optional<Header> header;
  auto decode = [&](const std::vector<std::string>& f, int line) -> Status {
    const std::string where = Where(file, line);
    if (!header) return OkStatus();
    TraceJob job;
    job.line = line;
    job.name = Field(f, *header, "instance_sn");
    if (job.name.empty()) return InvalidArgumentError(where + "column instance_sn: required");
    const std::string role = ToLower(Field(f, *header, "role"));
    if (role != "cn" && role != "hn") {
      return ColumnError(where, "role", "CN or HN", Field(f, *header, "role"));
    }
    job.queue = role;
    job.node_pools = role;
    if (std::string app = Field(f, *header, "app_name"); !app.empty()) job.labels["app"] = app;
    ASSIGN_OR_RETURN(double cpu,
                     ParseNumber(Field(f, *header, "cpu_request"), "cpu_request", where));
    ASSIGN_OR_RETURN(double mem,
                     ParseNumber(Field(f, *header, "memory_request"), "memory_request", where));
    ASSIGN_OR_RETURN(double disk,
                     ParseNumber(Field(f, *header, "disk_request"), "disk_request", where));
    ASSIGN_OR_RETURN(double rdma,
                     ParseNumber(Field(f, *header, "rdma_request"), "rdma_request", where));
    ASSIGN_OR_RETURN(int64_t gpu,
                     ParseInteger(Field(f, *header, "gpu_request"), "gpu_request", where));
    job.requests["cpu"] = model::Quantity::FromMilli(std::llround(cpu * 1000));
    job.requests["memory"] =
        model::Quantity::FromUnits(std::llround(mem * kGiB), model::QuantityFormat::kBinarySI);
    if (disk > 0) {
      job.requests["ephemeral-storage"] =
          model::Quantity::FromUnits(std::llround(disk * kGiB), model::QuantityFormat::kBinarySI);
    }
    if (rdma > 0) job.requests["alibaba.com/rdma"] = model::Quantity::FromUnits(std::llround(rdma));
    job.gpus = static_cast<int>(std::min<int64_t>(gpu, 1024));
    const std::string created = Field(f, *header, "creation_time");
    const std::string scheduled = Field(f, *header, "scheduled_time");
    const std::string deleted = Field(f, *header, "deletion_time");
    if (!created.empty()) {
      ASSIGN_OR_RETURN(job.submit_ms, ParseSecondsMs(created, "creation_time", where));
    }
    if (!deleted.empty()) {
      ASSIGN_OR_RETURN(int64_t end, ParseSecondsMs(deleted, "deletion_time", where));
      int64_t started = job.submit_ms;
      if (!scheduled.empty()) {
        ASSIGN_OR_RETURN(started, ParseSecondsMs(scheduled, "scheduled_time", where));
      }
      job.duration_ms = std::max<int64_t>(0, end - std::max(started, job.submit_ms));
    }
    jobs.push_back(std::move(job));
    return OkStatus();
  };
  Lines lines{text};
  std::string_view first;
  while (lines.Next(first) && Trim(first).empty()) {
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SplitCsvLine(first));
  header.emplace(names);
  for (const char* required :
       {"instance_sn", "role", "cpu_request", "gpu_request", "memory_request", "disk_request",
        "rdma_request", "creation_time", "scheduled_time", "deletion_time"}) {
    if (!header->Find(required)) {
      return InvalidArgumentError(std::string(file) + ":1: DLRM trace without column " + required);
    }
  }
  RETURN_IF_ERROR(ForEachCsvRow(text, file, decode).status());
  return jobs;
}

// ---- generic ----

const std::vector<std::string>& GenericColumns() {
  static const std::vector<std::string> kColumns = {
      "name", "submit",    "duration", "queue",    "node_pool", "cpu",           "memory",
      "gpu",  "gpu_model", "pods",     "gang_min", "priority",  "queue_timeout", "exec_timeout"};
  return kColumns;
}

// Sets one generic field of `job` from its text.
Status SetGenericField(std::string_view column, std::string_view value, const std::string& where,
                       char list_separator, TraceJob& job) {
  if (column == "name") {
    job.name = std::string(value);
  } else if (column == "submit") {
    ASSIGN_OR_RETURN(job.submit_ms, ParseSecondsMs(value, column, where));
  } else if (column == "duration") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(job.duration_ms, ParseSecondsMs(value, column, where));
    }
  } else if (column == "queue") {
    job.queue = std::string(value);
  } else if (column == "node_pool") {
    job.node_pools = Join(SplitList(value, list_separator), ",");
  } else if (column == "cpu" || column == "memory") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(job.requests[std::string(column)], ParseQuantity(value, column, where));
    }
  } else if (column == "gpu") {
    if (!value.empty()) {
      RETURN_IF_ERROR(ParseGpus(value, where, job));
    }
  } else if (column == "gpu_model") {
    job.gpu_products = SplitList(value, '|');
  } else if (column == "pods") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(int64_t pods, ParseInteger(value, column, where, 1));
      if (pods > 10000) return ColumnError(where, column, "at most 10000 pods", value);
      job.pods = static_cast<int>(pods);
    }
  } else if (column == "gang_min") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(int64_t min, ParseInteger(value, column, where, 1));
      job.gang_min = static_cast<int>(std::min<int64_t>(min, 10000));
    }
  } else if (column == "priority") {
    if (!value.empty()) {
      std::string_view t = Trim(value);
      int32_t p = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), p);
      if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) {
        return ColumnError(where, column, "an integer", value);
      }
      job.priority = p;
    }
  } else if (column == "queue_timeout") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(job.queue_timeout_ms, ParseSecondsMs(value, column, where));
    }
  } else if (column == "exec_timeout") {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(job.exec_timeout_ms, ParseSecondsMs(value, column, where));
    }
  } else if (StartsWith(column, "resource.") && column.size() > 9) {
    if (!value.empty()) {
      ASSIGN_OR_RETURN(job.requests[std::string(column.substr(9))],
                       ParseQuantity(value, column, where));
    }
  } else {
    return InvalidArgumentError(where + "unknown column \"" + std::string(column) + "\"" +
                                DidYouMean(column, GenericColumns()));
  }
  return OkStatus();
}

Status CheckGeneric(const TraceJob& job, const std::string& where, bool has_submit) {
  if (!has_submit) return InvalidArgumentError(where + "submit: required");
  if (job.gang_min > job.pods) {
    return InvalidArgumentError(where + "gang_min " + std::to_string(job.gang_min) +
                                " is more than the job's " + std::to_string(job.pods) + " pods");
  }
  return OkStatus();
}

Result<std::vector<TraceJob>> ParseGenericCsv(std::string_view text, std::string_view file) {
  std::vector<TraceJob> jobs;
  Lines lines{text};
  std::string_view first;
  while (lines.Next(first) && Trim(first).empty()) {
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SplitCsvLine(first));
  const std::string header_where = Where(file, lines.number);
  bool has_submit = false;
  for (const std::string& name : names) {
    const std::string column(Trim(name));
    has_submit |= column == "submit";
    TraceJob probe;
    Status known = SetGenericField(column, "", header_where, '|', probe);
    if (!known.ok() && StartsWith(known.message(), header_where + "unknown column")) return known;
  }
  if (!has_submit) return InvalidArgumentError(header_where + "column submit: required");
  auto decode = [&](const std::vector<std::string>& f, int line) -> Status {
    const std::string where = Where(file, line);
    TraceJob job;
    job.line = line;
    for (size_t i = 0; i < names.size(); ++i) {
      RETURN_IF_ERROR(SetGenericField(Trim(names[i]), Trim(f[i]), where, '|', job));
    }
    if (job.name.empty()) job.name = "job-" + std::to_string(line);
    RETURN_IF_ERROR(CheckGeneric(job, where, true));
    jobs.push_back(std::move(job));
    return OkStatus();
  };
  RETURN_IF_ERROR(ForEachCsvRow(text, file, decode).status());
  return jobs;
}

Result<std::vector<TraceJob>> ParseJsonl(std::string_view text, std::string_view file) {
  std::vector<TraceJob> jobs;
  Lines lines{text};
  std::string_view line;
  while (lines.Next(line)) {
    std::string_view t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    const std::string where = Where(file, lines.number);
    ASSIGN_OR_RETURN(
        Json doc,
        codec::ParseJson(
            t, Where(file, lines.number).substr(0, Where(file, lines.number).size() - 2)));
    if (!doc.is_object()) {
      return InvalidArgumentError(where + "expected a JSON object, got " +
                                  codec::JsonTypeName(doc));
    }
    TraceJob job;
    job.line = lines.number;
    bool has_submit = false;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const std::string& key = it.key();
      const Json& value = it.value();
      if (key == "resources" || key == "labels") {
        if (!value.is_object()) {
          return InvalidArgumentError(where + key + ": expected an object, got " +
                                      codec::JsonTypeName(value));
        }
        for (auto r = value.begin(); r != value.end(); ++r) {
          if (!r.value().is_string() && !r.value().is_number()) {
            return InvalidArgumentError(where + key + "." + r.key() +
                                        ": expected a string or a number");
          }
          const std::string text_value =
              r.value().is_string() ? r.value().get<std::string>() : r.value().dump();
          if (key == "labels") {
            job.labels[r.key()] = text_value;
          } else {
            ASSIGN_OR_RETURN(job.requests[r.key()],
                             ParseQuantity(text_value, "resources." + r.key(), where));
          }
        }
        continue;
      }
      std::string text_value;
      if (value.is_string()) {
        text_value = value.get<std::string>();
      } else if (value.is_number()) {
        text_value = value.dump();
      } else if (value.is_array() && (key == "node_pool" || key == "gpu_model")) {
        std::vector<std::string> parts;
        for (const Json& part : value) {
          if (!part.is_string()) {
            return InvalidArgumentError(where + key + ": expected a list of strings");
          }
          parts.push_back(part.get<std::string>());
        }
        text_value = Join(parts, "|");
      } else if (value.is_null()) {
        text_value = "";
      } else {
        return InvalidArgumentError(where + key + ": expected a string or a number, got " +
                                    codec::JsonTypeName(value));
      }
      has_submit |= key == "submit";
      std::vector<std::string> known = GenericColumns();
      known.emplace_back("resources");
      known.emplace_back("labels");
      if (StartsWith(key, "resource.") ||
          std::find(known.begin(), known.end(), key) == known.end()) {
        return InvalidArgumentError(where + "unknown key \"" + key + "\"" + DidYouMean(key, known));
      }
      RETURN_IF_ERROR(SetGenericField(key, text_value, where, '|', job));
    }
    if (job.name.empty()) job.name = "job-" + std::to_string(lines.number);
    RETURN_IF_ERROR(CheckGeneric(job, where, has_submit));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::string DetectFormat(std::string_view text) {
  Lines lines{text};
  std::string_view first;
  while (lines.Next(first)) {
    std::string_view t = Trim(first);
    if (t.empty() || t[0] == '#') continue;
    if (t[0] == '{') return "jsonl";
    if (StartsWith(t, "name,cpu_milli,memory_mib,num_gpu,gpu_milli")) return "openb";
    if (StartsWith(t, "instance_sn,")) return "dlrm";
    return "csv";
  }
  return "csv";
}

}  // namespace

Result<std::vector<std::string>> SplitCsvLine(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"' && Trim(field).empty() && !was_quoted) {
      field.clear();
      quoted = true;
      was_quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (was_quoted && c != ' ' && c != '\t') {
      return InvalidArgumentError("column " + std::to_string(fields.size() + 1) +
                                  ": text after a closing quote");
    } else if (!was_quoted) {
      field += c;
    }
  }
  if (quoted) {
    return InvalidArgumentError("column " + std::to_string(fields.size() + 1) +
                                ": quote not closed");
  }
  fields.push_back(std::move(field));
  return fields;
}

Result<Trace> ParseTrace(std::string_view text, std::string_view file_name,
                         std::string_view format) {
  Trace trace;
  trace.file = std::string(file_name);
  trace.format = format.empty() ? DetectFormat(text) : std::string(format);
  Result<std::vector<TraceJob>> jobs = InvalidArgumentError("");
  if (trace.format == "openb") {
    jobs = ParseOpenb(text, file_name);
  } else if (trace.format == "dlrm") {
    jobs = ParseDlrm(text, file_name);
  } else if (trace.format == "csv") {
    jobs = ParseGenericCsv(text, file_name);
  } else if (trace.format == "jsonl") {
    jobs = ParseJsonl(text, file_name);
  } else {
    std::vector<std::string> formats(std::begin(kTraceFormats), std::end(kTraceFormats));
    return InvalidArgumentError("unknown trace format \"" + trace.format +
                                "\"; expected openb, dlrm, csv or jsonl" +
                                DidYouMean(trace.format, formats));
  }
  if (!jobs.ok()) return jobs.status();
  trace.jobs = std::move(jobs).value();
  std::set<std::string> names;
  for (const TraceJob& job : trace.jobs) {
    if (!names.insert(job.name).second) {
      return InvalidArgumentError(Where(file_name, job.line) + "job name \"" + job.name +
                                  "\" is used twice");
    }
    trace.end_ms = std::max(trace.end_ms, job.submit_ms + job.duration_ms.value_or(0));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  return trace;
}

Result<Trace> LoadTrace(const std::string& path, std::string_view format) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(path));
  return ParseTrace(text, path, format);
}

}  // namespace gpupool::replay
