#include "store/batch_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace gpupool::store {
namespace batch_worker_test {

TEST(BatchWorkerTest, ItemsQueuedDuringABatchFormTheNextOneUpToTheLimit) {
  std::mutex mu;
  std::vector<std::vector<int>> batches;
  std::latch first_started(1);
  std::latch release_first(1);
  {
    BatchWorker<int> worker(3, [&](std::vector<int>& batch) {
      if (batch.front() == 0) {
        first_started.count_down();
        release_first.wait();  // the next items queue up meanwhile
      }
      std::lock_guard lock(mu);
      batches.push_back(batch);
    });
    worker.Push(0);
    first_started.wait();
    for (int i = 1; i <= 7; ++i) worker.Push(i);
    release_first.count_down();
  }  // closing processes what is still queued
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0], std::vector<int>({0}));
  EXPECT_EQ(batches[1], std::vector<int>({1, 2, 3}));  // at most 3 per batch, in order
  EXPECT_EQ(batches[2], std::vector<int>({4, 5, 6}));
  EXPECT_EQ(batches[3], std::vector<int>({7}));
}

TEST(BatchWorkerTest, ProcessesEveryItemOnceFromManyThreads) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  std::vector<std::atomic<int>> seen(kThreads * kPerThread);
  {
    BatchWorker<int> worker(64, [&](std::vector<int>& batch) {
      for (int item : batch) ++seen[static_cast<size_t>(item)];
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) worker.Push(t * kPerThread + i);
      });
    }
    for (auto& thread : threads) thread.join();
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << i;
}

TEST(BatchWorkerTest, ClosingAnUnusedWorkerStartsNoThread) {
  int calls = 0;
  BatchWorker<int> worker(4, [&](std::vector<int>&) { ++calls; });
  worker.Close();
  EXPECT_EQ(calls, 0);
}

}  // namespace batch_worker_test
}  // namespace gpupool::store
