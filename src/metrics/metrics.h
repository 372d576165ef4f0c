#pragma once
// A small Prometheus metrics registry: counters, gauges and histograms with labels, rendered in
// the text exposition format 0.0.4. Families are registered once (by name) and looked up by
// pointer afterwards; label values select a series.
//
// Thread contract: every method is thread-safe. Hot-path increments take one mutex per family.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpupool::metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  Counter(std::string name, std::string help, std::vector<std::string> label_names);
  void Increment(const LabelValues& labels, double by = 1);
  double Value(const LabelValues& labels) const;
  void Render(std::string& out) const;

 private:
  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> values_;
};

class Gauge {
 public:
  Gauge(std::string name, std::string help, std::vector<std::string> label_names);
  void Set(const LabelValues& labels, double value);
  // Replaces every series at once (for per-queue gauges recomputed each cycle: vanished queues go).
  void ReplaceAll(std::map<LabelValues, double> values);
  double Value(const LabelValues& labels) const;
  void Render(std::string& out) const;

 private:
  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> values_;
};

class Histogram {
 public:
  // `bounds` are the upper bounds of the buckets, ascending; +Inf is implied.
  Histogram(std::string name, std::string help, std::vector<std::string> label_names,
            std::vector<double> bounds);
  void Observe(const LabelValues& labels, double value);
  uint64_t Count(const LabelValues& labels) const;
  void Render(std::string& out) const;

 private:
  struct Series {
    std::vector<uint64_t> buckets;  // non-cumulative counts per bound, plus +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
};

class Registry {
 public:
  Counter* AddCounter(std::string name, std::string help, std::vector<std::string> labels = {});
  Gauge* AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Histogram* AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                          std::vector<double> bounds);
  // All families in registration order, text format.
  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Counter>> counters_;
  std::vector<std::unique_ptr<Gauge>> gauges_;
  std::vector<std::unique_ptr<Histogram>> histograms_;
  std::vector<std::pair<int, size_t>> order_;  // (0 counter | 1 gauge | 2 histogram, index)
};

// Escapes a label value (\\, \", \n).
std::string EscapeLabelValue(const std::string& value);

// Default latency buckets in seconds (0.5 ms .. 10 s).
std::vector<double> LatencyBuckets();

}  // namespace gpupool::metrics
