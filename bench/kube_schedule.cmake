# Pods created -> bound by gpupool-serve on the fake API server at 5,000 nodes
# (bench/kube_schedule_bench.cc; docs/benchmarks/kubernetes.md). The scenario is the scale test's.
if(TARGET gpupool_kube_scale)
  add_executable(gpupool-kube-schedule-bench ${CMAKE_CURRENT_SOURCE_DIR}/kube_schedule_bench.cc)
  target_link_libraries(gpupool-kube-schedule-bench PRIVATE gpupool_kube_scale CLI11::CLI11)
  # The client shares the machine with gpupool and the fake: glibc's malloc was a fifth of its
  # CPU per pod (docs/benchmarks/kubernetes.md).
  if(GPUPOOL_WITH_JEMALLOC)
    target_link_libraries(gpupool-kube-schedule-bench PRIVATE PkgConfig::JEMALLOC)
  endif()
  gpupool_warnings(gpupool-kube-schedule-bench)
endif()
