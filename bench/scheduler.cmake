# Scheduler benchmark: custom main (see the header comment of scheduler_bench.cc).
if(TARGET gpupool_scheduler)
  add_executable(scheduler_bench ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_bench.cc)
  target_link_libraries(scheduler_bench PRIVATE gpupool_scheduler)
  if(GPUPOOL_WITH_JEMALLOC)
    # The allocator the scheduler runs with in gpupool serve.
    target_link_libraries(scheduler_bench PRIVATE PkgConfig::JEMALLOC)
  endif()
  gpupool_warnings(scheduler_bench)
  if(GPUPOOL_BUILD_TESTS)
    # Reduced form for CI: checks the run completes and every decision is valid, never timing.
    add_test(NAME scheduler_bench_quick COMMAND scheduler_bench --quick)
  endif()
endif()
