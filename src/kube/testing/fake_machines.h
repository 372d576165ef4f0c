#pragma once
// The fake API server's machine controller: what a cluster's machine controllers and its cloud
// do for a scalable machine set, so that gpupool's machine pools can be tested end to end. Two
// flavours, each a set resource and the Machines it owns:
//   OpenShift    machine.openshift.io/v1beta1 machinesets -> machines, labelled
//                machine.openshift.io/cluster-api-machineset: <set>
//   Cluster API  cluster.x-k8s.io/v1beta1 machinedeployments -> machines, labelled
//                cluster.x-k8s.io/deployment-name: <set> (a real MachineDeployment owns
//                MachineSets that own the Machines; the fake skips that middle level)
// A set's Machines are those of its namespace with its label and an ownerReference to it. For
// every set, whenever it or one of its Machines changes:
//   - fewer Machines than spec.replicas (absent: 1, as both APIs default it): new Machines
//     named <set>-<5 random lowercase letters> (never the name of a Machine or Node that
//     exists), phase Provisioning, spec copied from spec.template.spec. After
//     `provision_delay_ms` each gets its Node (node name = machine name; labels from
//     spec.template.spec.metadata.labels; taints from spec.template.spec.taints; capacity from
//     the set's scale-from-zero annotations; Ready), then status.nodeRef and phase Running.
//   - more: the surplus goes, first the Machines annotated for deletion
//     (machine.openshift.io/delete-machine, cluster.x-k8s.io/delete-machine; any value), then
//     the newest. A Machine going is marked (deletionTimestamp, phase Deleting), its Node is
//     deleted, then the pods bound there (as the pod garbage collector deletes the pods of a
//     node that is gone: at once, no grace), then the Machine.
//   - status.replicas (Machines), readyReplicas and availableReplicas (those with a Node).
// A Machine a client deletes takes its Node (and pods) with it and is replaced; a set deleted
// takes its Machines (the garbage collector follows their ownerReferences). Every write goes
// through the store, so watches see it as they see a client's.
//
// Thread contract: safe from any thread; the work runs one piece at a time on a strand of the
// io_context.

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kube/testing/fake_store.h"

namespace gpupool::kube::fake {

struct MachineOptions {
  int64_t provision_delay_ms = 1000;  // a Machine created -> its Node Ready (0: at once)
};

class MachineController {
 public:
  MachineController(ObjectStore& store, boost::asio::io_context& io, MachineOptions options,
                    std::function<int64_t()> now_ms);

  // Starts watching the store; the sets already there are synced.
  void Start();

 private:
  // A flavour's resources and names.
  struct Flavour {
    bool openshift = false;
    int sets = -1;      // resource id of machinesets or machinedeployments
    int machines = -1;  // resource id of the same group's machines
    std::string owner_label;
    std::string delete_annotation;
  };
  struct SetKey {
    size_t flavour = 0;
    std::string namespace_;
    std::string name;
    auto operator<=>(const SetKey&) const = default;
  };

  void OnChange(const Change& change);  // under the store's lock: only schedules work
  void Schedule(const SetKey& key);
  void Sync(const SetKey& key);
  // Returns how many were made.
  int64_t CreateMachines(const Flavour& flavour, const Json& set, int64_t count);
  std::string NewMachineName(const Flavour& flavour, const std::string& namespace_,
                             const std::string& set_name);
  void StartProvisioning(const Flavour& flavour, const Json& machine);
  void Provision(const Flavour& flavour, const std::string& namespace_, const std::string& name,
                 const std::string& uid);
  Json NodeFor(const Flavour& flavour, const Json& set, const Json& machine) const;
  void DeleteMachine(const Flavour& flavour, const Json& machine);
  // Deletes the Node of `machine` (when it still links to it) and the pods bound there.
  void DeleteNodeOf(const Flavour& flavour, const Json& machine);
  void UpdateStatus(const Flavour& flavour, const SetKey& key, int64_t replicas, int64_t ready);
  // Oldest first: by creationTimestamp (seconds), then by the order this controller made them.
  void SortByAge(std::vector<std::shared_ptr<const Json>>& machines) const;

  ObjectStore& store_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  const MachineOptions options_;
  const std::function<int64_t()> now_ms_;
  const int nodes_;
  const int pods_;
  std::vector<Flavour> flavours_;

  std::mutex mu_;
  std::set<SetKey> pending_;  // sets whose sync is on its way

  // Only touched on the strand.
  std::mt19937 random_;
  uint64_t created_ = 0;
  std::map<std::string, uint64_t> creation_order_;  // by machine uid
  std::set<std::string> provisioning_;              // machine uids with a timer running
};

}  // namespace gpupool::kube::fake
