# The server's cross-module tests: the REST API over loopback (in process), and process-level
# crash-safety and leader-election tests that run the real gpupool-serve binary
# (server/process_test.py: kill -9 with 1,000 submissions in flight; leader takeover within the
# lease). Each takes well under a minute; the timeout leaves room for a loaded machine.
if(TARGET gpupool_app)
  add_executable(gpupool_server_e2e_test server/api_test.cc server/hardening_test.cc)
  target_link_libraries(gpupool_server_e2e_test PRIVATE gpupool_app gpupool_api_testing
                        SQLite::SQLite3 GTest::gtest_main)
  target_compile_definitions(gpupool_server_e2e_test PRIVATE
    GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUPOOL_SERVE_BINARY="$<TARGET_FILE:gpupool-serve>")
  add_dependencies(gpupool_server_e2e_test gpupool-serve)
  gpupool_warnings(gpupool_server_e2e_test)
  gpupool_test_build(gpupool_server_e2e_test)
  gtest_discover_tests(gpupool_server_e2e_test DISCOVERY_TIMEOUT 60)
endif()

find_package(Python3 COMPONENTS Interpreter)
if(TARGET gpupool-serve AND Python3_FOUND)
  set(process_test ${CMAKE_CURRENT_SOURCE_DIR}/server/process_test.py)
  add_test(NAME server_crash_sqlite
           COMMAND ${Python3_EXECUTABLE} ${process_test} crash --serve $<TARGET_FILE:gpupool-serve>)
  add_test(NAME server_crash_postgres
           COMMAND ${Python3_EXECUTABLE} ${process_test} crash --serve $<TARGET_FILE:gpupool-serve>
                   --db-env GPUPOOL_TEST_PG_URL)
  add_test(NAME server_leader_postgres
           COMMAND ${Python3_EXECUTABLE} ${process_test} leader --serve $<TARGET_FILE:gpupool-serve>
                   --db-env GPUPOOL_TEST_PG_URL)
  set_tests_properties(server_crash_sqlite server_crash_postgres server_leader_postgres
                       PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180 RUN_SERIAL TRUE)
endif()

# The dashboard's routes (UI files, /api/ui/config, /api/views/* ETags and access), in process.
if(TARGET gpupool_app)
  add_executable(gpupool_dashboard_routes_test server/dashboard_routes_test.cc)
  target_link_libraries(gpupool_dashboard_routes_test PRIVATE gpupool_app GTest::gtest_main)
  gpupool_warnings(gpupool_dashboard_routes_test)
  gpupool_test_build(gpupool_dashboard_routes_test)
  gtest_discover_tests(gpupool_dashboard_routes_test DISCOVERY_TIMEOUT 60)
endif()

# The page of a build without the dashboard (-DGPUPOOL_WITH_WEB=OFF), tested in every build: the
# embed script's OFF output (a CMake script, no compiler) compiled into the test itself, whose
# definitions of the asset table then take the place of libgpupool_webui.a's. A second build
# tree configured OFF would compile every module again; this costs one test file and one link.
# server/ui_without_dashboard_test.cc says more.
if(TARGET gpupool_app)
  set(without_dashboard ${CMAKE_CURRENT_BINARY_DIR}/assets_without_dashboard.cc)
  add_custom_command(
    OUTPUT ${without_dashboard}
    COMMAND ${CMAKE_COMMAND} -DOUT=${without_dashboard}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    DEPENDS ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    COMMENT "the page of a build without the dashboard (for its test)"
    VERBATIM)
  add_executable(gpupool_ui_without_dashboard_test server/ui_without_dashboard_test.cc
                 ${without_dashboard})
  target_link_libraries(gpupool_ui_without_dashboard_test PRIVATE gpupool_app GTest::gtest_main)
  gpupool_warnings(gpupool_ui_without_dashboard_test)
  gpupool_test_build(gpupool_ui_without_dashboard_test)
  gtest_discover_tests(gpupool_ui_without_dashboard_test DISCOVERY_TIMEOUT 60)
endif()

# OSMO workflows in Run:ai node pools and quotas through the real `gpupool serve` and
# `gpupool --server` (server/together_test.py): node pools chosen and defaulted, NORMAL within
# the pool's guarantee runs, LOW over quota runs and is reclaimed, NORMAL over quota waits with
# the rule in its message; unknown node pools refused.
if(TARGET gpupool AND Python3_FOUND)
  add_test(NAME server_node_pools_and_quota
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/server/together_test.py
                   --gpupool $<TARGET_FILE:gpupool>)
  set_tests_properties(server_node_pools_and_quota PROPERTIES TIMEOUT 180)
  # Projects (server/projects_test.py): workflow submit --queue and the workflow's queue, granted
  # by roles (deny by default), the project's quota used by the scheduler, shown by query/list.
  add_test(NAME server_projects
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/server/projects_test.py
                   --gpupool $<TARGET_FILE:gpupool>)
  set_tests_properties(server_projects PROPERTIES TIMEOUT 180)
  # Seed 003's organisation (examples/runai-org) through the server with OSMO workflows
  # (server/runai_org_test.py): over quota on idle node pools, NORMAL within deserved quota,
  # reclaim by the owner, the projects table.
  add_test(NAME server_runai_org
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/server/runai_org_test.py
                   --gpupool $<TARGET_FILE:gpupool>)
  set_tests_properties(server_runai_org PROPERTIES TIMEOUT 180)
  # Seed 004's Jobs through the server (server/seed004_jobs_test.py): `apply -f` of the seed's
  # batch/v1 Jobs runs them as workflows on nodes machine pools scale up for them;
  # parallelism, backoffLimit, "unchanged" on a second apply, bad Jobs refused.
  add_test(NAME server_seed004_jobs
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/server/seed004_jobs_test.py
                   --gpupool $<TARGET_FILE:gpupool>)
  set_tests_properties(server_seed004_jobs PROPERTIES TIMEOUT 180 COST 9)
endif()
