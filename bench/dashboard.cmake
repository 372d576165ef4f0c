# The dashboard's benchmark data (scripts/bench-dashboard.sh, docs/BENCHMARKS.md "Dashboard").
if(TARGET gpupool_service)
  add_executable(gpupool-dashboard-data dashboard_data.cc)
  target_link_libraries(gpupool-dashboard-data PRIVATE gpupool_service gpupool_store CLI11::CLI11)
  gpupool_warnings(gpupool-dashboard-data)
endif()
