# The web dashboard in headless Chromium (web/tests/): a real `gpupool serve` on the demo data,
# driven by playwright-core. Skipped (exit 77) when Chromium is missing. Screenshots go to
# build/dashboard-screenshots/.
if(GPUPOOL_WITH_WEB)
  add_test(NAME dashboard_browser
           COMMAND bash ${PROJECT_SOURCE_DIR}/web/tests/run.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR})
  set_tests_properties(dashboard_browser PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    COST 40  # the suite's longest test: started first (cmake/gpupool_module.cmake, gpupool_test_costs)
    # Needs the binary with the dashboard in it and nothing else running against its port range.
    RESOURCE_LOCK gpupool_browser)
endif()
