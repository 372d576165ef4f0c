# End-to-end test of `gpupool schedule` with MachinePools (the autoscaler what-if) on
# examples/machine-pools.
if(TARGET gpupool)
  add_executable(gpupool_autoscaler_e2e_test autoscaler/autoscaler_e2e_test.cc)
  target_link_libraries(gpupool_autoscaler_e2e_test PRIVATE nlohmann_json::nlohmann_json
    GTest::gtest_main)
  target_compile_definitions(gpupool_autoscaler_e2e_test PRIVATE
    GPUPOOL_BIN="$<TARGET_FILE:gpupool>" GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(gpupool_autoscaler_e2e_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_dependencies(gpupool_autoscaler_e2e_test gpupool)
  gpupool_warnings(gpupool_autoscaler_e2e_test)
  gpupool_test_build(gpupool_autoscaler_e2e_test)
  gtest_discover_tests(gpupool_autoscaler_e2e_test DISCOVERY_TIMEOUT 60)
endif()
