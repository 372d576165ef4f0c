#pragma once
// A CPU-only v1 Node as the scheduling loop's tests put it into the store and the simulated
// backend: `cpu` cores, 64Gi of memory, 200Gi of ephemeral storage, 110 pods.

#include <nlohmann/json.hpp>
#include <string>

namespace gpupool::controller::testing {

inline nlohmann::ordered_json CpuNode(const std::string& name, const std::string& cpu) {
  nlohmann::ordered_json resources = {
      {"cpu", cpu}, {"memory", "64Gi"}, {"ephemeral-storage", "200Gi"}, {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status", {{"allocatable", resources}, {"capacity", resources}}}};
}

}  // namespace gpupool::controller::testing
