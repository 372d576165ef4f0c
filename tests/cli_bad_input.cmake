# Hostile input to the real `gpupool` binary (tests/cli/bad_input_test.cc): documents nested too
# deep and files over the input limit, refused by every command that reads a file.
if(TARGET gpupool)
  add_executable(gpupool_cli_bad_input_test cli/bad_input_test.cc)
  target_link_libraries(gpupool_cli_bad_input_test PRIVATE nlohmann_json::nlohmann_json
    GTest::gtest_main)
  target_compile_definitions(gpupool_cli_bad_input_test PRIVATE GPUPOOL_BIN="$<TARGET_FILE:gpupool>")
  add_dependencies(gpupool_cli_bad_input_test gpupool)
  gpupool_warnings(gpupool_cli_bad_input_test)
  gpupool_test_build(gpupool_cli_bad_input_test)
  gtest_discover_tests(gpupool_cli_bad_input_test DISCOVERY_TIMEOUT 60)
endif()
