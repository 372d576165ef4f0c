# The scheduling config kinds of src/model: Queue, NodePool and MachinePool. Included by
# src/model/CMakeLists.txt before the targets are defined, so it appends to the source lists.
list(APPEND GPUPOOL_MODEL_SOURCES queue.cc node_pool.cc machine_pool.cc scale_target.cc quota_tree.cc
  disruption_budget.cc job.cc)
list(APPEND GPUPOOL_MODEL_TEST_SOURCES queue_test.cc node_pool_test.cc machine_pool_test.cc
  quota_tree_test.cc disruption_budget_test.cc job_test.cc)
