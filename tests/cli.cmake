# End-to-end tests of the real `gpupool` binary (tests/cli/): each test runs the binary in a
# temporary directory with GPUPOOL_DB pointing at a temporary SQLite file.
if(TARGET gpupool)
  add_executable(gpupool_cli_e2e_test cli/cli_e2e_test.cc cli/cli_hardening_test.cc
    cli/together_e2e_test.cc)
  target_link_libraries(gpupool_cli_e2e_test PRIVATE nlohmann_json::nlohmann_json
    SQLite::SQLite3 GTest::gmock GTest::gtest_main)
  target_include_directories(gpupool_cli_e2e_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(gpupool_cli_e2e_test PRIVATE
    GPUPOOL_BIN="$<TARGET_FILE:gpupool>" GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(gpupool_cli_e2e_test gpupool)
  gpupool_warnings(gpupool_cli_e2e_test)
  gpupool_test_build(gpupool_cli_e2e_test)
  gtest_discover_tests(gpupool_cli_e2e_test DISCOVERY_TIMEOUT 60)
endif()
