# Autoscaler benchmark: the machine-pool what-if at scale (custom main; see its header comment).
if(TARGET gpupool_autoscaler)
  add_executable(autoscaler_bench ${CMAKE_CURRENT_SOURCE_DIR}/autoscaler_bench.cc)
  target_link_libraries(autoscaler_bench PRIVATE gpupool_autoscaler)
  gpupool_warnings(autoscaler_bench)
  if(GPUPOOL_BUILD_TESTS)
    # Reduced form for CI: checks the plan is valid, never timing.
    add_test(NAME autoscaler_bench_quick COMMAND autoscaler_bench --quick)
  endif()
endif()
