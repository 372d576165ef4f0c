# Open-loop HTTP load generator (bench/http_load.cc): the p99 at a fixed rate for
# scripts/bench-http.sh, with latency counted from when each request was due.
add_library(gpupool_open_loop STATIC ${CMAKE_CURRENT_SOURCE_DIR}/open_loop.cc)
target_include_directories(gpupool_open_loop PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
gpupool_warnings(gpupool_open_loop)

add_executable(gpupool-http-load ${CMAKE_CURRENT_SOURCE_DIR}/http_load.cc)
target_link_libraries(gpupool-http-load PRIVATE gpupool_open_loop Boost::headers CLI11::CLI11
                      Threads::Threads)
gpupool_warnings(gpupool-http-load)

if(GPUPOOL_BUILD_TESTS)
  add_executable(gpupool_open_loop_test ${CMAKE_CURRENT_SOURCE_DIR}/open_loop_test.cc)
  target_link_libraries(gpupool_open_loop_test PRIVATE gpupool_open_loop GTest::gtest_main)
  gpupool_warnings(gpupool_open_loop_test)
  gtest_discover_tests(gpupool_open_loop_test DISCOVERY_TIMEOUT 60)
  # The tool against a real gpupool-serve: counts only, no timing.
  find_package(Python3 COMPONENTS Interpreter)
  if(TARGET gpupool-serve AND Python3_FOUND)
    add_test(NAME http_load_against_server
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/http_load_test.py
                     --load $<TARGET_FILE:gpupool-http-load> --serve $<TARGET_FILE:gpupool-serve>)
    set_tests_properties(http_load_against_server PROPERTIES TIMEOUT 120)
  endif()
endif()
