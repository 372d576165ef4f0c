# Create-and-bind throughput of the Kubernetes client against the fake API server
# (bench/kube_bind_bench.cc; docs/benchmarks/kubernetes.md).
if(TARGET gpupool_kube_fake AND TARGET gpupool-fake-apiserver)
  add_executable(gpupool-kube-bind-bench ${CMAKE_CURRENT_SOURCE_DIR}/kube_bind_bench.cc)
  target_link_libraries(gpupool-kube-bind-bench PRIVATE gpupool_kube_fake CLI11::CLI11)
  target_compile_definitions(gpupool-kube-bind-bench PRIVATE
    GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUPOOL_FAKE_APISERVER="$<TARGET_FILE:gpupool-fake-apiserver>")
  add_dependencies(gpupool-kube-bind-bench gpupool-fake-apiserver)
  if(GPUPOOL_WITH_JEMALLOC)
    target_link_libraries(gpupool-kube-bind-bench PRIVATE PkgConfig::JEMALLOC)
  endif()
  gpupool_warnings(gpupool-kube-bind-bench)
endif()
