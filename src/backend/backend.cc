#include "backend/backend.h"

#include "backend/kubernetes/kube_backend.h"
#include "backend/sim/sim_backend.h"
#include "backend/slurm/slurm_backend.h"
#include "common/strings.h"

namespace gpupool::backend {

std::string HandedInKey(const PodRef& pod) {
  return "pod:" + pod.namespace_ + "/" + pod.name + "/" + pod.uid;
}

Result<LogChunk> Backend::ReadLog(std::string_view key, int64_t offset, int64_t max_bytes) const {
  (void)key;
  (void)offset;
  (void)max_bytes;
  return FailedPreconditionError("the " + std::string(Kind()) +
                                 " backend keeps no task output: it runs no processes");
}

Status Backend::BindPods(const std::vector<PodBinding>& gang) {
  (void)gang;
  return FailedPreconditionError("the " + std::string(Kind()) + " backend has no pods handed in");
}

Result<int32_t> Backend::ReadReplicas(const model::ScaleTarget& target) {
  return FailedPreconditionError("the " + std::string(Kind()) + " backend scales no " +
                                 model::DescribeScaleTarget(target) +
                                 ": machine pools with a scale_target need the kubernetes backend");
}

Status Backend::SetReplicas(const model::ScaleTarget& target, int32_t replicas,
                            const std::vector<std::string>& remove_nodes) {
  (void)replicas;
  (void)remove_nodes;
  return ReadReplicas(target).status();
}

Result<std::unique_ptr<Backend>> OpenBackend(std::string_view spec, const BackendOptions& options) {
  if (spec == "kubernetes") return OpenKubernetesBackend(options.kubernetes);
  if (StartsWith(spec, "sim:")) {
    ASSIGN_OR_RETURN(auto nodes, LoadClusterNodes(std::string(spec.substr(4))));
    return std::unique_ptr<Backend>(std::make_unique<SimBackend>(std::move(nodes)));
  }
  if (StartsWith(spec, "slurm:")) {
    ASSIGN_OR_RETURN(auto slurm, SlurmBackend::Open(spec.substr(6), options));
    return std::unique_ptr<Backend>(std::move(slurm));
  }
  return InvalidArgumentError("unknown backend \"" + std::string(spec) +
                              "\": expected sim:CLUSTER_FILE, slurm:http://HOST:PORT, "
                              "slurm:unix:PATH or kubernetes");
}

}  // namespace gpupool::backend
