# The submission pipeline benchmark (docs/benchmarks/submit.md).
if(TARGET gpupool_submit)
  add_executable(gpupool_submit_bench submit_bench.cc)
  target_link_libraries(gpupool_submit_bench PRIVATE gpupool_submit benchmark::benchmark)
  gpupool_warnings(gpupool_submit_bench)
endif()
