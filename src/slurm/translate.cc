#include "slurm/translate.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "common/strings.h"
#include "model/k8s.h"
#include "model/quantity.h"

namespace gpupool::slurm {
namespace {

using Json = nlohmann::ordered_json;
using model::Quantity;

constexpr int64_t kMiB = int64_t{1024} * 1024;

Result<int64_t> ParseCount(std::string_view text, std::string_view gres) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return InvalidArgumentError("GRES \"" + std::string(gres) + "\": bad count \"" +
                                std::string(text) + "\"");
  }
  return value;
}

// Multipliers Slurm allows on GRES counts (gpu:1k is legal, if unlikely).
int64_t CountSuffix(char c) {
  switch (c) {
    case 'k':
    case 'K':
      return 1024;
    case 'm':
    case 'M':
      return int64_t{1024} * 1024;
    default:
      return 0;
  }
}

// A label name (the part after the prefix): alphanumerics and - _ . inside, at most 63, starting
// and ending alphanumeric. Other characters become '-'.
std::string LabelName(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += ok ? c : '-';
  }
  if (out.size() > 63) out.resize(63);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

bool HasFlag(const SlurmNode& node, std::string_view flag) {
  return std::find(node.flags.begin(), node.flags.end(), flag) != node.flags.end();
}

std::string ShellQuote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,@%+") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

int64_t CeilDiv(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }

Result<std::vector<std::string>> StringList(const Json& container, const char* field) {
  std::vector<std::string> out;
  auto it = container.find(field);
  if (it == container.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return InvalidArgumentError(std::string("spec.containers[0].") + field + ": expected a list");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) {
      return InvalidArgumentError(std::string("spec.containers[0].") + field + "[" +
                                  std::to_string(i) + "]: expected a string");
    }
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

Result<std::map<std::string, std::string>> Environment(const Json& container) {
  std::map<std::string, std::string> env;
  auto it = container.find("env");
  if (it == container.end() || it->is_null()) return env;
  if (!it->is_array()) return InvalidArgumentError("spec.containers[0].env: expected a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& entry = (*it)[i];
    std::string path = "spec.containers[0].env[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      return InvalidArgumentError(path + ": expected {name, value}");
    }
    std::string name = entry["name"].get<std::string>();
    if (entry.contains("valueFrom")) {
      return InvalidArgumentError(path + " (" + name +
                                  "): valueFrom cannot be resolved on Slurm; give a value");
    }
    auto value = entry.find("value");
    if (value == entry.end() || value->is_null()) {
      env[name] = "";
    } else if (value->is_string()) {
      env[name] = value->get<std::string>();
    } else {
      return InvalidArgumentError(path + ".value: expected a string");
    }
  }
  return env;
}

}  // namespace

Result<GpuGres> ParseGpuGres(std::string_view gres) {
  GpuGres out;
  std::string_view text = Trim(gres);
  if (text.empty() || text == "(null)") return out;
  for (const std::string& raw : Split(text, ',')) {
    std::string_view item = Trim(raw);
    // Drop "(S:0-1)" / "(IDX:0-2)" and anything after it.
    if (size_t paren = item.find('('); paren != std::string_view::npos)
      item = item.substr(0, paren);
    if (item.empty()) continue;
    std::vector<std::string> parts = Split(item, ':');
    if (parts[0] != "gpu") continue;  // mps, shard, other GRES
    std::string type;
    std::string count_text = "1";  // "gpu" alone is one GPU
    if (parts.size() == 2) {
      count_text = parts[1];
    } else if (parts.size() >= 3) {
      type = parts[1];
      count_text = parts[2];
    }
    int64_t multiplier = 1;
    if (!count_text.empty() && CountSuffix(count_text.back()) != 0) {
      multiplier = CountSuffix(count_text.back());
      count_text.pop_back();
    }
    ASSIGN_OR_RETURN(int64_t count, ParseCount(count_text, gres));
    out.count += count * multiplier;
    if (!type.empty() && count > 0) out.types.insert(type);
  }
  return out;
}

void NodeUsage::Add(const NodeUsage& other) {
  cpus += other.cpus;
  memory_mb += other.memory_mb;
  gpus += other.gpus;
}

std::string UnavailableState(const SlurmNode& node, const NodeOptions& options) {
  static constexpr std::array<std::pair<const char*, const char*>, 4> kStates = {{
      {"down", "down"},
      {"future", "future"},
      {"unknown", "unknown"},
      {"error", "error"},
  }};
  for (const auto& [state, word] : kStates) {
    if (node.state == state) return word;
  }
  static constexpr std::array<std::pair<const char*, const char*>, 11> kFlags = {{
      {"DRAIN", "drain"},
      {"FAIL", "fail"},
      {"MAINTENANCE", "maint"},
      {"NOT_RESPONDING", "not-responding"},
      {"RESERVED", "reserved"},
      {"POWERED_DOWN", "powered-down"},
      {"POWERING_DOWN", "powering-down"},
      {"POWERING_UP", "powering-up"},
      {"REBOOT_REQUESTED", "reboot"},
      {"REBOOT_ISSUED", "reboot"},
      {"INVALID_REG", "invalid"},
  }};
  for (const auto& [flag, word] : kFlags) {
    if (HasFlag(node, flag)) return word;
  }
  if (!node.partitions.empty() &&
      std::all_of(node.partitions.begin(), node.partitions.end(),
                  [&](const std::string& p) { return options.closed_partitions.contains(p); })) {
    return "partition-closed";
  }
  return "";
}

Result<Json> NodeFromSlurm(const SlurmNode& slurm, const NodeUsage& own,
                           const NodeOptions& options) {
  auto context = [&](const Status& s) { return s.WithContext("Slurm node " + slurm.name); };
  auto gres = ParseGpuGres(slurm.gres);
  if (!gres.ok()) return context(gres.status());
  auto used = ParseGpuGres(slurm.gres_used);
  if (!used.ok()) return context(used.status());

  model::Node node;
  node.name = slurm.name;
  node.labels["kubernetes.io/hostname"] = slurm.name;
  node.labels[kSourceLabel] = "slurm";
  if (gres->count > 0) {
    node.labels["nvidia.com/gpu.count"] = std::to_string(gres->count);
    if (std::string type = gres->SingleType(); !type.empty()) {
      auto product = options.gpu_products.find(type);
      node.labels["nvidia.com/gpu.product"] =
          product != options.gpu_products.end() ? product->second : type;
    }
  }
  for (const std::string& feature : slurm.features) {
    if (std::string name = LabelName(feature); !name.empty()) {
      node.labels[kFeatureLabelPrefix + name] = "true";
    }
  }
  for (const std::string& partition : slurm.partitions) {
    if (std::string name = LabelName(partition); !name.empty()) {
      node.labels[kPartitionLabelPrefix + name] = "true";
    }
  }

  node.capacity["cpu"] = Quantity::FromUnits(slurm.cpus);
  node.capacity["memory"] =
      Quantity::FromUnits(slurm.real_memory_mb * kMiB, model::QuantityFormat::kBinarySI);
  node.capacity["pods"] = Quantity::FromUnits(std::max<int64_t>(slurm.cpus, 1));
  if (gres->count > 0) node.capacity["nvidia.com/gpu"] = Quantity::FromUnits(gres->count);
  if (slurm.temporary_disk_mb > 0) {
    node.capacity["ephemeral-storage"] =
        Quantity::FromUnits(slurm.temporary_disk_mb * kMiB, model::QuantityFormat::kBinarySI);
  }

  // What others hold: the node's allocation less gpupool's own jobs on it.
  NodeUsage foreign;
  foreign.cpus = std::clamp<int64_t>(slurm.alloc_cpus - own.cpus, 0, slurm.cpus);
  foreign.memory_mb =
      std::clamp<int64_t>(slurm.alloc_memory_mb - own.memory_mb, 0, slurm.real_memory_mb);
  foreign.gpus = std::clamp<int64_t>(used->count - own.gpus, 0, gres->count);
  node.allocatable = node.capacity;
  node.allocatable["cpu"] = Quantity::FromUnits(slurm.cpus - foreign.cpus);
  node.allocatable["memory"] = Quantity::FromUnits(
      (slurm.real_memory_mb - foreign.memory_mb) * kMiB, model::QuantityFormat::kBinarySI);
  if (gres->count > 0) {
    node.allocatable["nvidia.com/gpu"] = Quantity::FromUnits(gres->count - foreign.gpus);
  }
  if (foreign.cpus > 0 || foreign.memory_mb > 0 || foreign.gpus > 0) {
    node.annotations[kForeignUsageAnnotation] = "cpu=" + std::to_string(foreign.cpus) +
                                                ",memory=" + std::to_string(foreign.memory_mb) +
                                                "Mi,gpu=" + std::to_string(foreign.gpus);
  }

  Json condition = {{"type", "Ready"}, {"status", "True"}, {"reason", "SlurmNodeAvailable"}};
  if (std::string state = UnavailableState(slurm, options); !state.empty()) {
    node.unschedulable = true;
    node.taints.push_back({kUnavailableTaint, state, model::TaintEffect::kNoSchedule});
    std::string message = "Slurm node " + slurm.state;
    for (const auto& flag : slurm.flags) message += "+" + ToLower(flag);
    if (!slurm.reason.empty()) {
      message += ": " + slurm.reason;
      node.annotations[kReasonAnnotation] = slurm.reason;
    }
    condition = {{"type", "Ready"},
                 {"status", "False"},
                 {"reason", "SlurmNodeUnavailable"},
                 {"message", message}};
  }
  node.raw = Json::object();
  node.raw["status"]["conditions"] = Json::array({condition});
  return model::NodeToJson(node);
}

std::string OutputPath(const std::string& output_dir, const std::string& key) {
  std::string file = key;
  std::replace(file.begin(), file.end(), '/', '.');
  std::string dir = output_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + file + ".out";
}

Result<JobSubmission> SubmissionForTask(const TaskRun& task, const SlurmNode& node,
                                        const std::vector<SlurmPartition>& partitions,
                                        const SubmitOptions& options) {
  auto fail = [&](const Status& s) { return s.WithContext("task " + task.key); };
  const Json* container = nullptr;
  if (task.pod.is_object() && task.pod.contains("spec") && task.pod["spec"].is_object() &&
      task.pod["spec"].contains("containers") && task.pod["spec"]["containers"].is_array() &&
      !task.pod["spec"]["containers"].empty() && task.pod["spec"]["containers"][0].is_object()) {
    container = &task.pod["spec"]["containers"][0];
  }
  if (container == nullptr) return fail(InvalidArgumentError("pod: no spec.containers[0]"));
  auto command = StringList(*container, "command");
  if (!command.ok()) return fail(command.status());
  auto args = StringList(*container, "args");
  if (!args.ok()) return fail(args.status());
  std::vector<std::string> argv = *command;
  argv.insert(argv.end(), args->begin(), args->end());
  if (argv.empty()) {
    return fail(InvalidArgumentError(
        "spec.containers[0]: no command or args (Slurm runs no container image, so the task must "
        "say what to run)"));
  }
  auto env = Environment(*container);
  if (!env.ok()) return fail(env.status());
  auto requests = model::PodRequestsFromJson(task.pod);
  if (!requests.ok()) return fail(requests.status());
  auto node_gres = ParseGpuGres(node.gres);
  if (!node_gres.ok()) return fail(node_gres.status());

  JobSubmission s;
  s.name = task.key;
  s.comment = options.comment;
  s.nodelist = task.node;
  s.partition = options.partition;
  if (s.partition.empty()) {
    for (const auto& p : partitions) {
      if (p.is_default && std::find(node.partitions.begin(), node.partitions.end(), p.name) !=
                              node.partitions.end()) {
        s.partition = p.name;
      }
    }
    if (s.partition.empty() && !node.partitions.empty()) s.partition = node.partitions.front();
  }
  auto request = [&](const char* name) -> const Quantity* {
    auto it = requests->find(name);
    return it == requests->end() ? nullptr : &it->second;
  };
  if (const Quantity* cpu = request("cpu")) {
    s.cpus_per_task = std::max<int64_t>(1, CeilDiv(cpu->MilliValue(), 1000));
  }
  if (const Quantity* memory = request("memory")) {
    s.memory_per_node_mb = CeilDiv(memory->Value(), kMiB);
  }
  if (const Quantity* storage = request("ephemeral-storage")) {
    s.temporary_disk_per_node_mb = CeilDiv(storage->Value(), kMiB);
  }
  if (const Quantity* gpu = request("nvidia.com/gpu"); gpu != nullptr && gpu->Value() > 0) {
    std::string type = node_gres->SingleType();
    s.gpus_per_node = (type.empty() ? "" : type + ":") + std::to_string(gpu->Value());
  }
  if (task.exec_timeout_seconds && *task.exec_timeout_seconds > 0) {
    s.time_limit_minutes = CeilDiv(*task.exec_timeout_seconds, 60) + 1;
  }
  s.working_directory = options.output_dir;
  s.standard_output = OutputPath(options.output_dir, task.key);
  s.environment["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (auto& [name, value] : *env) s.environment[name] = value;
  s.environment["GPUPOOL_TASK_KEY"] = task.key;
  std::string line = "exec";
  for (const auto& word : argv) line += " " + ShellQuote(word);
  s.script = "#!/bin/sh\n" + line + "\n";
  return s;
}

namespace {

constexpr char kArrayTag[] = " array:";
constexpr char kGateTag[] = " gate";
// What the gate asks for besides one CPU: it runs `sleep`, and on a cluster without a default
// memory per CPU an unstated amount would be the whole node's.
constexpr int64_t kGateMemoryMb = 64;
// slurmctld refuses a comment longer than this (job_mgr.c, _test_strlen).
constexpr size_t kMaxComment = 1024;

bool ShellName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool ArrayEligible(const JobSubmission& s) {
  return !s.name.empty() && s.name.find_first_of(" \t\n") == std::string::npos &&
         s.script.starts_with("#!/bin/sh\n") &&
         std::all_of(s.environment.begin(), s.environment.end(),
                     [](const auto& entry) { return ShellName(entry.first); });
}

bool SameRequest(const JobSubmission& a, const JobSubmission& b) {
  return a.nodelist == b.nodelist && a.partition == b.partition &&
         a.cpus_per_task == b.cpus_per_task && a.memory_per_node_mb == b.memory_per_node_mb &&
         a.temporary_disk_per_node_mb == b.temporary_disk_per_node_mb &&
         a.gpus_per_node == b.gpus_per_node && a.time_limit_minutes == b.time_limit_minutes &&
         a.working_directory == b.working_directory && a.comment == b.comment;
}

}  // namespace

std::vector<std::vector<size_t>> GroupForArrays(const std::vector<JobSubmission>& submissions) {
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> open;          // indexes into groups of the arrays that may still grow
  std::vector<size_t> comment_size;  // per group: the array's comment so far
  for (size_t i = 0; i < submissions.size(); ++i) {
    const JobSubmission& s = submissions[i];
    bool placed = false;
    if (ArrayEligible(s)) {
      for (size_t g : open) {
        const JobSubmission& first = submissions[groups[g].front()];
        if (!SameRequest(first, s) || comment_size[g] + 1 + s.name.size() > kMaxComment) continue;
        groups[g].push_back(i);
        comment_size[g] += 1 + s.name.size();
        placed = true;
        break;
      }
    }
    if (placed) continue;
    groups.push_back({i});
    comment_size.push_back(s.comment.size() + std::strlen(kArrayTag) + s.name.size());
    if (ArrayEligible(s)) open.push_back(groups.size() - 1);
  }
  return groups;
}

JobSubmission ArraySubmission(const std::vector<const JobSubmission*>& elements) {
  const JobSubmission& first = *elements.front();
  JobSubmission array = first;
  array.name = first.name + " +" + std::to_string(elements.size() - 1);
  array.array = "0-" + std::to_string(elements.size() - 1);
  array.comment = first.comment + kArrayTag;
  std::string dir = first.working_directory.empty() ? "/tmp" : first.working_directory;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  array.standard_output = dir + "/gpupool-array.%A_%a.out";
  // Each element exports its own environment; the job's is only what a shell needs to start.
  array.environment = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
  std::string script =
      "#!/bin/sh\n# gpupool: one task per array element, chosen by $SLURM_ARRAY_TASK_ID\n"
      "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (size_t i = 0; i < elements.size(); ++i) {
    const JobSubmission& e = *elements[i];
    array.comment += (i == 0 ? "" : " ") + e.name;
    script += std::to_string(i) + ")\n";
    if (!e.standard_output.empty())
      script += "  exec >" + ShellQuote(e.standard_output) + " 2>&1\n";
    for (const auto& [name, value] : e.environment) {
      script += "  export " + name + "=" + ShellQuote(value) + "\n";
    }
    // The single job's script is "#!/bin/sh\n" and one exec line.
    std::string line = e.script.substr(std::strlen("#!/bin/sh\n"));
    while (!line.empty() && line.back() == '\n') line.pop_back();
    script += "  " + line + "\n  ;;\n";
  }
  script += "esac\necho \"gpupool: no task for array element $SLURM_ARRAY_TASK_ID\" >&2\nexit 1\n";
  array.script = std::move(script);
  return array;
}

JobSubmission GateSubmission(const JobSubmission& like, std::string_view comment) {
  JobSubmission gate;
  gate.name = "gpupool-gate";
  gate.comment = std::string(comment) + kGateTag;
  gate.partition = like.partition;
  gate.cpus_per_task = 1;
  gate.memory_per_node_mb = kGateMemoryMb;
  gate.time_limit_minutes = 1;
  gate.working_directory = like.working_directory.empty() ? "/tmp" : like.working_directory;
  gate.standard_output = "/dev/null";
  gate.environment = {{"PATH", "/usr/bin:/bin"}};
  gate.script = "#!/bin/sh\nexec sleep 120\n";  // until cancelled, or its time limit
  return gate;
}

bool IsGateComment(std::string_view job_comment, std::string_view comment) {
  return job_comment.size() == comment.size() + std::strlen(kGateTag) &&
         job_comment.starts_with(comment) && job_comment.ends_with(kGateTag);
}

std::string_view GangOf(std::string_view key) {
  size_t first = key.find('/');
  if (first == std::string_view::npos) return key;
  size_t second = key.find('/', first + 1);
  return second == std::string_view::npos ? key : key.substr(0, second);
}

std::optional<std::vector<std::string>> ArrayKeys(std::string_view job_comment,
                                                  std::string_view comment) {
  if (!job_comment.starts_with(comment)) return std::nullopt;
  job_comment.remove_prefix(comment.size());
  if (!job_comment.starts_with(kArrayTag)) return std::nullopt;
  job_comment.remove_prefix(std::strlen(kArrayTag));
  std::vector<std::string> keys;
  for (const std::string& key : Split(job_comment, ' ')) {
    if (!key.empty()) keys.push_back(key);
  }
  return keys;
}

Result<std::vector<int64_t>> ParseArrayIndexes(std::string_view text) {
  constexpr int64_t kMaxIndex = 4000001;  // slurmctld's MaxArraySize ceiling
  if (size_t throttle = text.find('%'); throttle != std::string_view::npos) {
    text = text.substr(0, throttle);
  }
  std::vector<int64_t> out;
  auto number = [&](std::string_view part) -> Result<int64_t> {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value < 0 || value > kMaxIndex) {
      return InvalidArgumentError("array task string \"" + std::string(text) + "\": bad index \"" +
                                  std::string(part) + "\"");
    }
    return value;
  };
  for (const std::string& range : Split(Trim(text), ',')) {
    if (range.empty()) continue;
    std::string_view r = range;
    size_t dash = r.find('-');
    ASSIGN_OR_RETURN(int64_t low, number(r.substr(0, dash)));
    int64_t high = low;
    if (dash != std::string_view::npos) {
      std::string_view rest = r.substr(dash + 1);
      // "0-15:4": a step; Slurm shows none for arrays gpupool submits, but accept it.
      int64_t step = 1;
      if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
        ASSIGN_OR_RETURN(step, number(rest.substr(colon + 1)));
        rest = rest.substr(0, colon);
        step = std::max<int64_t>(step, 1);
      }
      ASSIGN_OR_RETURN(high, number(rest));
      for (int64_t i = low; i <= high; i += step) out.push_back(i);
      continue;
    }
    out.push_back(low);
  }
  return out;
}

int DecodeWaitStatus(int64_t status) {
  if (status < 0) return 1;
  int signal = static_cast<int>(status & 0x7f);
  if (signal != 0) return 128 + signal;
  return static_cast<int>((status >> 8) & 0xff);
}

JobOutcome OutcomeOf(const SlurmJob& job) {
  struct Ended {
    const char* state;
    int default_exit;  // when the job never ran (wait status 0)
    bool lost;
    const char* reason;
  };
  static constexpr std::array<Ended, 11> kEnded = {{
      {"FAILED", 1, false, ""},
      {"TIMEOUT", 143, false, "TIMEOUT: the job ran past its Slurm time limit"},
      {"CANCELLED", 143, false, "CANCELLED: the job was cancelled in Slurm"},
      {"DEADLINE", 143, false, "DEADLINE: the job reached its deadline"},
      {"OUT_OF_MEMORY", 137, false, "OUT_OF_MEMORY: the job ran out of memory"},
      {"PREEMPTED", 143, true, "PREEMPTED: Slurm preempted the job"},
      {"NODE_FAIL", 137, true, "NODE_FAIL: the job's node failed"},
      {"BOOT_FAIL", 1, true, "BOOT_FAIL: the job's node failed to boot"},
      {"REVOKED", 1, true, "REVOKED: the job was revoked (federation)"},
      {"SPECIAL_EXIT", 1, false, "SPECIAL_EXIT: the job ended in a special state"},
      {"STOPPED", 143, false, "STOPPED: the job was stopped"},
  }};
  static constexpr std::array<const char*, 7> kPending = {
      "PENDING",     "CONFIGURING",   "REQUEUED",     "REQUEUE_HOLD",
      "REQUEUE_FED", "RESV_DEL_HOLD", "POWER_UP_NODE"};
  static constexpr std::array<const char*, 6> kRunning = {"RUNNING",  "COMPLETING", "SUSPENDED",
                                                          "RESIZING", "SIGNALING",  "STAGE_OUT"};

  JobOutcome outcome;
  if (job.state == "COMPLETED") {
    outcome.phase = JobPhase::kEnded;
    outcome.exit_code = DecodeWaitStatus(job.exit_code);
    return outcome;
  }
  for (const Ended& e : kEnded) {
    if (job.state != e.state) continue;
    outcome.phase = JobPhase::kEnded;
    outcome.exit_code = job.exit_code == 0 ? e.default_exit : DecodeWaitStatus(job.exit_code);
    if (outcome.exit_code == 0) outcome.exit_code = e.default_exit;
    outcome.lost = e.lost;
    outcome.reason = e.reason;
    if (outcome.reason.empty()) outcome.reason = std::string(e.state);
    if (!job.state_reason.empty() && job.state_reason != "None") {
      outcome.reason += " (" + job.state_reason + ")";
    }
    return outcome;
  }
  for (const char* state : kRunning) {
    if (job.state == state) {
      outcome.phase = JobPhase::kRunning;
      return outcome;
    }
  }
  outcome.phase = JobPhase::kPending;
  if (std::find_if(kPending.begin(), kPending.end(),
                   [&](const char* s) { return job.state == s; }) == kPending.end()) {
    outcome.reason = "unknown Slurm job state " + job.state;
  }
  return outcome;
}

NodeUsage JobUsage(const SlurmJob& job) {
  NodeUsage usage;
  usage.cpus = job.cpus;
  usage.memory_mb =
      job.memory_per_node_mb > 0 ? job.memory_per_node_mb : job.memory_per_cpu_mb * job.cpus;
  for (const auto& detail : job.gres_detail) {
    auto gpus = ParseGpuGres(detail);
    if (gpus.ok()) usage.gpus += gpus->count;
  }
  return usage;
}

}  // namespace gpupool::slurm
