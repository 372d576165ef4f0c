#pragma once
// BatchWorker: one thread that processes what is queued in batches. Items pushed while a batch is
// being processed form the next batch, so under load every batch is as large as the load makes it
// (up to max_batch) and the thread never sleeps; idle, it waits on a condition variable. The
// thread starts with the first push. Close() (also run by the destructor) processes what is still
// queued, then joins the thread; pushing after Close() is a bug.
//
// Used by SqlStore for its group commit (writes) and its batched version checks (reads).

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gpupool::store {

template <typename Item>
class BatchWorker {
 public:
  using Process = std::function<void(std::vector<Item>& batch)>;

  BatchWorker(size_t max_batch, Process process)
      : max_batch_(std::max<size_t>(1, max_batch)), process_(std::move(process)) {}
  ~BatchWorker() { Close(); }
  BatchWorker(const BatchWorker&) = delete;
  BatchWorker& operator=(const BatchWorker&) = delete;

  void Push(Item item) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    queue_.push_back(std::move(item));
    // The thread waits only when the queue was empty.
    if (queue_.size() == 1) cv_.notify_one();
  }

  void Close() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and everything queued is processed
      size_t n = std::min(queue_.size(), max_batch_);
      auto end = queue_.begin() + static_cast<std::ptrdiff_t>(n);
      std::vector<Item> batch(std::make_move_iterator(queue_.begin()),
                              std::make_move_iterator(end));
      queue_.erase(queue_.begin(), end);
      lock.unlock();
      process_(batch);
      lock.lock();
    }
  }

  const size_t max_batch_;
  const Process process_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace gpupool::store
