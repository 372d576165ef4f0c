# gpupool-serve --backend kubernetes against the fake API server (both real processes on loopback
# ports): workflows become pods that gpupool creates, binds and sees end.
if(TARGET gpupool_app AND TARGET gpupool-fake-apiserver)
  # Where the end-to-end code finds the sources, gpupool-serve and the fake API server.
  add_library(gpupool_kube_e2e_paths INTERFACE)
  target_compile_definitions(gpupool_kube_e2e_paths INTERFACE
    GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUPOOL_SERVE_BINARY="$<TARGET_FILE:gpupool-serve>"
    GPUPOOL_FAKE_APISERVER="$<TARGET_FILE:gpupool-fake-apiserver>")
  add_dependencies(gpupool_kube_e2e_paths gpupool-serve gpupool-fake-apiserver)

  add_executable(gpupool_kube_e2e_test kube/kube_e2e_test.cc kube/kube_victims_e2e_test.cc
                 kube/kube_machine_pools_e2e_test.cc)
  target_link_libraries(gpupool_kube_e2e_test PRIVATE gpupool_kube_e2e_paths gpupool_kube_fake
                        gpupool_scheduler PkgConfig::HTTPLIB GTest::gtest_main)
  gpupool_warnings(gpupool_kube_e2e_test)
  gpupool_test_build(gpupool_kube_e2e_test)
  gtest_discover_tests(gpupool_kube_e2e_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)

  # The scale scenario, shared with bench/kube_schedule_bench.cc: a test of its own (it takes a
  # minute), so that the other end-to-end tests are not held behind it.
  add_library(gpupool_kube_scale STATIC kube/scale_scenario.cc)
  target_include_directories(gpupool_kube_scale PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/kube)
  target_link_libraries(gpupool_kube_scale PRIVATE gpupool_kube_e2e_paths
                        PUBLIC gpupool_kube_fake PkgConfig::HTTPLIB)
  add_dependencies(gpupool_kube_scale gpupool-serve gpupool-fake-apiserver)
  gpupool_warnings(gpupool_kube_scale)
  add_executable(gpupool_kube_scale_e2e_test kube/kube_scale_e2e_test.cc)
  target_link_libraries(gpupool_kube_scale_e2e_test PRIVATE gpupool_kube_scale GTest::gtest_main)
  gpupool_warnings(gpupool_kube_scale_e2e_test)
  gpupool_test_build(gpupool_kube_scale_e2e_test)
  # COST: 10-20 s each, started early (cmake/gpupool_module.cmake, gpupool_test_costs).
  gtest_discover_tests(gpupool_kube_scale_e2e_test DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 600 COST 20)
endif()
