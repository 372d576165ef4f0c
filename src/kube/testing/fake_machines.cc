#include "kube/testing/fake_machines.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "common/clock.h"
#include "kube/testing/fake_api_internal.h"

namespace gpupool::kube::fake {
namespace {

constexpr char kVersion[] = "v1beta1";
// The labels of Cluster API's template a real Machine controller syncs to its Node (other
// domains stay on the Machine).
constexpr const char* kCapiNodeLabelDomains[] = {
    "node-role.kubernetes.io/", "node-restriction.kubernetes.io/", "node.cluster.x-k8s.io/"};

std::string StringAt(const Json& object, const char* key) {
  const Json& value = Field(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

std::string Label(const Json& object, const char* key) {
  return StringAt(Field(Field(object, "metadata"), "labels"), key);
}

bool HasAnnotation(const Json& object, const std::string& key) {
  const Json& annotations = Field(Field(object, "metadata"), "annotations");
  return annotations.is_object() && annotations.contains(key);
}

std::string Annotation(const Json& object, const char* key) {
  return StringAt(Field(Field(object, "metadata"), "annotations"), key);
}

// The ownerReference naming a set of `kind` and `name`, or null.
const Json* OwnerReference(const Json& machine, const std::string& kind, const std::string& name) {
  const Json& references = Field(Field(machine, "metadata"), "ownerReferences");
  if (!references.is_array()) return nullptr;
  for (const Json& reference : references) {
    if (StringAt(reference, "kind") == kind && StringAt(reference, "name") == name) {
      return &reference;
    }
  }
  return nullptr;
}

std::string NodeRefName(const Json& machine) {
  return StringAt(Field(Field(machine, "status"), "nodeRef"), "name");
}

// What the node of a machine says links it there, as the real controllers annotate it.
Json NodeLinkAnnotations(bool openshift, const std::string& namespace_,
                         const std::string& machine) {
  if (openshift) return {{"machine.openshift.io/machine", namespace_ + "/" + machine}};
  return {{"cluster.x-k8s.io/machine", machine},
          {"cluster.x-k8s.io/cluster-namespace", namespace_}};
}

// status.capacity from the annotations cluster-autoscaler reads to scale a set from zero.
Json Capacity(bool openshift, const Json& set) {
  // Every kubelet reports its root volume; neither API says its size without a provider spec, so
  // the fake gives ROSA's default root volume (a Cluster API annotation may say otherwise).
  Json capacity = {{"ephemeral-storage", "300Gi"}};
  auto copy = [&](const char* annotation, const std::string& resource, const std::string& suffix) {
    std::string value = Annotation(set, annotation);
    if (!value.empty()) capacity[resource] = value + suffix;
  };
  if (openshift) {
    copy("machine.openshift.io/vCPU", "cpu", "");
    copy("machine.openshift.io/memoryMb", "memory", "Mi");
    copy("machine.openshift.io/GPU", "nvidia.com/gpu", "");
    capacity["pods"] = "110";
    return capacity;
  }
  std::string gpu = Annotation(set, "capacity.cluster-autoscaler.kubernetes.io/gpu-type");
  copy("capacity.cluster-autoscaler.kubernetes.io/cpu", "cpu", "");
  copy("capacity.cluster-autoscaler.kubernetes.io/memory", "memory", "");
  copy("capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk", "ephemeral-storage", "");
  copy("capacity.cluster-autoscaler.kubernetes.io/gpu-count", gpu.empty() ? "nvidia.com/gpu" : gpu,
       "");
  capacity["pods"] = "110";
  copy("capacity.cluster-autoscaler.kubernetes.io/maxPods", "pods", "");
  return capacity;
}

Json NodeLabels(bool openshift, const Json& set, const std::string& node) {
  const Json& set_template = Field(Field(set, "spec"), "template");
  Json labels = Json::object();
  const Json& given = Field(Field(Field(set_template, "spec"), "metadata"), "labels");
  if (given.is_object()) labels = given;
  const Json& machine_labels = Field(Field(set_template, "metadata"), "labels");
  if (!openshift && machine_labels.is_object()) {
    for (const auto& [key, value] : machine_labels.items()) {
      for (const char* domain : kCapiNodeLabelDomains) {
        if (key.starts_with(domain)) labels[key] = value;
      }
    }
  }
  // The kubelet's own labels.
  labels["kubernetes.io/hostname"] = node;
  labels["kubernetes.io/os"] = "linux";
  labels["kubernetes.io/arch"] = "amd64";
  return labels;
}

}  // namespace

MachineController::MachineController(ObjectStore& store, boost::asio::io_context& io,
                                     MachineOptions options, std::function<int64_t()> now_ms)
    : store_(store),
      strand_(boost::asio::make_strand(io)),
      options_(options),
      now_ms_(std::move(now_ms)),
      nodes_(ResourceId("nodes")),
      pods_(ResourceId("pods")),
      random_(std::random_device{}()) {
  flavours_.push_back({true, FindResource("machine.openshift.io", kVersion, "machinesets"),
                       FindResource("machine.openshift.io", kVersion, "machines"),
                       "machine.openshift.io/cluster-api-machineset",
                       "machine.openshift.io/delete-machine"});
  flavours_.push_back({false, FindResource("cluster.x-k8s.io", kVersion, "machinedeployments"),
                       FindResource("cluster.x-k8s.io", kVersion, "machines"),
                       "cluster.x-k8s.io/deployment-name", "cluster.x-k8s.io/delete-machine"});
}

void MachineController::Start() {
  store_.AddObserver([this](const Change& change) { OnChange(change); });
  for (size_t f = 0; f < flavours_.size(); ++f) {
    for (const auto& set : store_.Select(flavours_[f].sets, [](const Json&) { return true; })) {
      Schedule({f, MetadataField(*set, "namespace"), MetadataField(*set, "name")});
    }
    // Machines whose set is gone are deleted by their set's sync.
    for (const auto& machine :
         store_.Select(flavours_[f].machines, [](const Json&) { return true; })) {
      std::string owner = Label(*machine, flavours_[f].owner_label.c_str());
      if (!owner.empty()) Schedule({f, MetadataField(*machine, "namespace"), owner});
    }
  }
}

void MachineController::OnChange(const Change& change) {
  for (size_t f = 0; f < flavours_.size(); ++f) {
    const Flavour& flavour = flavours_[f];
    const Json& object = *change.object.object;
    if (change.resource == flavour.sets) {
      Schedule({f, MetadataField(object, "namespace"), MetadataField(object, "name")});
    } else if (change.resource == flavour.machines) {
      if (change.type == EventType::kDeleted && !NodeRefName(object).empty()) {
        // Deleted by a client (or by Sync, which deleted the node already): its node goes too.
        boost::asio::post(strand_, [this, f, machine = change.object.object] {
          DeleteNodeOf(flavours_[f], *machine);
        });
      }
      std::string owner = Label(object, flavour.owner_label.c_str());
      if (!owner.empty()) Schedule({f, MetadataField(object, "namespace"), owner});
    }
  }
}

void MachineController::Schedule(const SetKey& key) {
  {
    std::lock_guard lock(mu_);
    if (!pending_.insert(key).second) return;  // a sync of it is on its way
  }
  boost::asio::post(strand_, [this, key] { Sync(key); });
}

void MachineController::Sync(const SetKey& key) {
  {
    std::lock_guard lock(mu_);
    pending_.erase(key);
  }
  const Flavour& flavour = flavours_[key.flavour];
  auto set = store_.Get(flavour.sets, key.namespace_, key.name);
  const std::string set_uid = set.ok() ? MetadataField(*set->object, "uid") : "";
  const std::string kind = Resources()[flavour.sets].kind;
  auto machines = store_.Select(flavour.machines, [&](const Json& machine) {
    return MetadataField(machine, "namespace") == key.namespace_ &&
           Label(machine, flavour.owner_label.c_str()) == key.name &&
           OwnerReference(machine, kind, key.name) != nullptr;
  });
  // Machines of a set that is gone (or was replaced under the same name) are garbage.
  std::erase_if(machines, [&](const std::shared_ptr<const Json>& machine) {
    if (StringAt(*OwnerReference(*machine, kind, key.name), "uid") == set_uid) return false;
    DeleteMachine(flavour, *machine);
    return true;
  });
  if (!set.ok()) return;
  // Absent, both APIs default it to 1; a value that is no integer counts as 0 here (a real
  // API server refuses it), as the fake must not throw on a client's odd write.
  const Json& given = Field(Field(*set->object, "spec"), "replicas");
  const int64_t replicas = given.is_null()             ? 1
                           : given.is_number_integer() ? given.get<int64_t>()
                                                       : 0;
  const int64_t have = static_cast<int64_t>(machines.size());
  int64_t created = 0;
  if (have < replicas) created = CreateMachines(flavour, *set->object, replicas - have);
  if (have > replicas) {
    SortByAge(machines);
    // Deleted from the back: those annotated for deletion (the oldest of them first), then the
    // newest of the rest.
    auto annotated = std::stable_partition(machines.begin(), machines.end(), [&](const auto& m) {
      return !HasAnnotation(*m, flavour.delete_annotation);
    });
    std::reverse(annotated, machines.end());
    while (static_cast<int64_t>(machines.size()) > replicas) {
      DeleteMachine(flavour, *machines.back());
      machines.pop_back();
    }
  }
  int64_t ready = 0;
  for (const auto& machine : machines) {
    if (!NodeRefName(*machine).empty()) {
      ++ready;
    } else {
      StartProvisioning(flavour, *machine);  // after a restart: its timer was lost
    }
  }
  UpdateStatus(flavour, key, static_cast<int64_t>(machines.size()) + created, ready);
}

int64_t MachineController::CreateMachines(const Flavour& flavour, const Json& set, int64_t count) {
  const std::string set_namespace = MetadataField(set, "namespace");
  const std::string set_name = MetadataField(set, "name");
  const ResourceType& set_type = Resources()[flavour.sets];
  const Json& set_template = Field(Field(set, "spec"), "template");
  Json labels = Field(Field(set_template, "metadata"), "labels");
  if (!labels.is_object()) labels = Json::object();
  labels[flavour.owner_label] = set_name;
  const std::string cluster = StringAt(Field(set, "spec"), "clusterName");
  if (!flavour.openshift && !cluster.empty()) labels["cluster.x-k8s.io/cluster-name"] = cluster;
  Json spec = Field(set_template, "spec");
  if (!spec.is_object()) spec = Json::object();
  Json owner = {
      {"apiVersion", set_type.ApiVersion()}, {"kind", set_type.kind}, {"name", set_name},
      {"uid", MetadataField(set, "uid")},    {"controller", true},    {"blockOwnerDeletion", true}};
  int64_t created = 0;
  for (int64_t i = 0; i < count; ++i) {
    Json machine = {{"metadata",
                     {{"name", NewMachineName(flavour, set_namespace, set_name)},
                      {"labels", labels},
                      {"ownerReferences", Json::array({owner})}}},
                    {"spec", spec},
                    {"status", {{"phase", "Provisioning"}}}};
    auto stored = store_.Create(flavour.machines, set_namespace, std::move(machine));
    if (!stored.ok()) continue;  // the name was taken meanwhile: the next sync makes another
    creation_order_[MetadataField(*stored->object, "uid")] = ++created_;
    StartProvisioning(flavour, *stored->object);
    ++created;
  }
  return created;
}

std::string MachineController::NewMachineName(const Flavour& flavour, const std::string& namespace_,
                                              const std::string& set_name) {
  std::uniform_int_distribution<int> letter('a', 'z');
  while (true) {
    std::string name = set_name + "-";
    for (int i = 0; i < 5; ++i) name += static_cast<char>(letter(random_));
    if (!store_.Get(flavour.machines, namespace_, name).ok() &&
        !store_.Get(nodes_, "", name).ok()) {
      return name;
    }
  }
}

void MachineController::StartProvisioning(const Flavour& flavour, const Json& machine) {
  const std::string uid = MetadataField(machine, "uid");
  if (!provisioning_.insert(uid).second) return;
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_);
  timer->expires_after(std::chrono::milliseconds(options_.provision_delay_ms));
  timer->async_wait([this, timer, &flavour, machine_namespace = MetadataField(machine, "namespace"),
                     name = MetadataField(machine, "name"),
                     uid](const boost::system::error_code& ec) {
    provisioning_.erase(uid);
    if (!ec) Provision(flavour, machine_namespace, name, uid);
  });
}

void MachineController::Provision(const Flavour& flavour, const std::string& namespace_,
                                  const std::string& name, const std::string& uid) {
  auto machine = store_.Get(flavour.machines, namespace_, name);
  if (!machine.ok() || MetadataField(*machine->object, "uid") != uid ||
      !NodeRefName(*machine->object).empty() ||
      Field(*machine->object, "metadata").contains("deletionTimestamp")) {
    return;
  }
  const std::string set_name = Label(*machine->object, flavour.owner_label.c_str());
  auto set = store_.Get(flavour.sets, namespace_, set_name);
  if (!set.ok()) return;  // its set's sync deletes it
  Json node_object = NodeFor(flavour, *set->object, *machine->object);
  const Json provider_id = node_object["spec"]["providerID"];
  auto node = store_.Create(nodes_, "", std::move(node_object));
  if (!node.ok()) return;
  (void)store_.Update(flavour.machines, namespace_, name, [&](Json& m) {
    if (MetadataField(m, "uid") != uid) return AbortedError("replaced");
    m["spec"]["providerID"] = provider_id;
    m["status"]["nodeRef"] = {
        {"kind", "Node"}, {"name", name}, {"uid", MetadataField(*node->object, "uid")}};
    m["status"]["phase"] = "Running";
    return OkStatus();
  });
}

Json MachineController::NodeFor(const Flavour& flavour, const Json& set,
                                const Json& machine) const {
  const std::string name = MetadataField(machine, "name");
  const std::string machine_namespace = MetadataField(machine, "namespace");
  const std::string now = FormatTimestamp(now_ms_());
  Json capacity = Capacity(flavour.openshift, set);
  Json spec = {{"providerID", "fake://" + machine_namespace + "/" + name}};
  const Json& taints = Field(Field(Field(Field(set, "spec"), "template"), "spec"), "taints");
  if (taints.is_array() && !taints.empty()) spec["taints"] = taints;
  Json ready = {{"type", "Ready"},
                {"status", "True"},
                {"reason", "KubeletReady"},
                {"message", "kubelet is posting ready status (fake machine controller)"},
                {"lastHeartbeatTime", now},
                {"lastTransitionTime", now}};
  return {{"metadata",
           {{"name", name},
            {"labels", NodeLabels(flavour.openshift, set, name)},
            {"annotations", NodeLinkAnnotations(flavour.openshift, machine_namespace, name)}}},
          {"spec", std::move(spec)},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", Json::array({ready})},
            {"nodeInfo",
             {{"architecture", "amd64"},
              {"operatingSystem", "linux"},
              {"kubeletVersion", "v1.30.0-fake"}}}}}};
}

void MachineController::DeleteMachine(const Flavour& flavour, const Json& machine) {
  const std::string machine_namespace = MetadataField(machine, "namespace");
  const std::string name = MetadataField(machine, "name");
  const std::string uid = MetadataField(machine, "uid");
  const std::string now = FormatTimestamp(now_ms_());
  // Marked first, as a real Machine carries its deletionTimestamp while its node is drained.
  (void)store_.Update(flavour.machines, machine_namespace, name, [&](Json& m) {
    if (MetadataField(m, "uid") != uid) return AbortedError("replaced");
    if (!m["metadata"].contains("deletionTimestamp")) m["metadata"]["deletionTimestamp"] = now;
    m["status"]["phase"] = "Deleting";
    return OkStatus();
  });
  DeleteNodeOf(flavour, machine);
  (void)store_.Remove(flavour.machines, machine_namespace, name, uid);
  creation_order_.erase(uid);
}

void MachineController::DeleteNodeOf(const Flavour& flavour, const Json& machine) {
  const std::string node_name = NodeRefName(machine);
  if (node_name.empty()) return;
  auto node = store_.Get(nodes_, "", node_name);
  const Json link = NodeLinkAnnotations(flavour.openshift, MetadataField(machine, "namespace"),
                                        MetadataField(machine, "name"));
  if (!node.ok()) return;
  for (const auto& [key, value] : link.items()) {
    if (Annotation(*node->object, key.c_str()) != value.get<std::string>()) return;  // not its
  }
  (void)store_.Remove(nodes_, "", node_name, MetadataField(*node->object, "uid"));
  // The pod garbage collector's part: the pods of a node that is gone are deleted at once.
  auto orphans = store_.Select(pods_, [&](const Json& pod) {
    return StringAt(Field(pod, "spec"), "nodeName") == node_name;
  });
  for (const auto& pod : orphans) {
    (void)store_.Remove(pods_, MetadataField(*pod, "namespace"), MetadataField(*pod, "name"),
                        MetadataField(*pod, "uid"));
  }
}

void MachineController::UpdateStatus(const Flavour& flavour, const SetKey& key, int64_t replicas,
                                     int64_t ready) {
  // An edit that changes nothing takes no revision and sends no event (ObjectStore::Update).
  (void)store_.Update(flavour.sets, key.namespace_, key.name, [&](Json& set) {
    Json& status = set["status"];
    if (!status.is_object()) status = Json::object();
    status["replicas"] = replicas;
    status["readyReplicas"] = ready;
    status["availableReplicas"] = ready;
    return OkStatus();
  });
}

void MachineController::SortByAge(std::vector<std::shared_ptr<const Json>>& machines) const {
  auto age = [&](const Json& machine) {
    auto order = creation_order_.find(MetadataField(machine, "uid"));
    return std::make_tuple(MetadataField(machine, "creationTimestamp"),
                           order == creation_order_.end() ? uint64_t{0} : order->second,
                           MetadataField(machine, "name"));
  };
  std::stable_sort(machines.begin(), machines.end(),
                   [&](const auto& a, const auto& b) { return age(*a) < age(*b); });
}

}  // namespace gpupool::kube::fake
