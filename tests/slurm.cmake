# The Slurm backend on a real loopback Slurm cluster (scripts/slurm-test-cluster.sh: munged,
# slurmctld, 3 slurmds with fake GPUs, slurmrestd), started once for these tests by a fixture.
# They skip (77) where the cluster cannot run: Slurm's packages missing, or not root.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET gpupool-serve AND Python3_FOUND)
  set(slurm_state ${CMAKE_BINARY_DIR}/slurm-test-cluster.state)
  set(slurm_fixture ${CMAKE_CURRENT_SOURCE_DIR}/slurm/cluster_fixture.sh)
  set(slurm_test ${CMAKE_CURRENT_SOURCE_DIR}/slurm/slurm_e2e_test.py)
  add_test(NAME slurm_cluster_start COMMAND ${slurm_fixture} start ${slurm_state})
  add_test(NAME slurm_cluster_stop COMMAND ${slurm_fixture} stop ${slurm_state})
  set_tests_properties(slurm_cluster_start PROPERTIES FIXTURES_SETUP slurm_cluster TIMEOUT 120)
  set_tests_properties(slurm_cluster_stop PROPERTIES FIXTURES_CLEANUP slurm_cluster TIMEOUT 120)
  add_test(NAME slurm_e2e_workflow_tcp
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} workflow --transport tcp
                   --serve $<TARGET_FILE:gpupool-serve> --cluster-state ${slurm_state})
  add_test(NAME slurm_e2e_workflow_unix
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} workflow --transport unix
                   --serve $<TARGET_FILE:gpupool-serve> --cluster-state ${slurm_state})
  add_test(NAME slurm_e2e_restart
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} restart
                   --serve $<TARGET_FILE:gpupool-serve> --cluster-state ${slurm_state})
  add_test(NAME slurm_e2e_ctld_restart
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} ctld-restart
                   --serve $<TARGET_FILE:gpupool-serve> --cluster-state ${slurm_state})
  add_test(NAME slurm_e2e_logs
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} logs
                   --serve $<TARGET_FILE:gpupool-serve> --cli $<TARGET_FILE:gpupool>
                   --cluster-state ${slurm_state})
  add_test(NAME slurm_e2e_array
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} array
                   --serve $<TARGET_FILE:gpupool-serve> --cluster-state ${slurm_state})
  # Two pools over the one partition: LOW over quota, reclaimed by the owner (issue 19).
  add_test(NAME slurm_e2e_quota_reclaim
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} quota-reclaim
                   --serve $<TARGET_FILE:gpupool-serve> --cli $<TARGET_FILE:gpupool>
                   --cluster-state ${slurm_state})
  # The BACKEND config says how to reach Slurm; the pool naming it runs there (issue 19).
  add_test(NAME slurm_e2e_backend_config
           COMMAND ${Python3_EXECUTABLE} ${slurm_test} backend-config
                   --serve $<TARGET_FILE:gpupool-serve> --cli $<TARGET_FILE:gpupool>
                   --cluster-state ${slurm_state})
  # One cluster, one test at a time: the tests count the cluster's jobs. Together about a minute
  # one after the other, so they start early (COST: cmake/gpupool_module.cmake,
  # gpupool_test_costs).
  set_tests_properties(slurm_e2e_workflow_tcp slurm_e2e_workflow_unix slurm_e2e_restart
                       slurm_e2e_ctld_restart slurm_e2e_logs slurm_e2e_array
                       slurm_e2e_quota_reclaim slurm_e2e_backend_config
                       PROPERTIES FIXTURES_REQUIRED slurm_cluster SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK slurm_cluster COST 10)
endif()
