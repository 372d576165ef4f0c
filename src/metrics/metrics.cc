#include "metrics/metrics.h"

#include <cmath>
#include <cstdio>

namespace gpupool::metrics {
namespace {

std::string FormatNumber(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!out.empty()) out += ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra.empty()) {
    if (!out.empty()) out += ",";
    out += extra;
  }
  return out.empty() ? "" : "{" + out + "}";
}

void Header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Counter::Counter(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void Counter::Increment(const LabelValues& labels, double by) {
  std::lock_guard lock(mu_);
  values_[labels] += by;
}

double Counter::Value(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0 : it->second;
}

void Counter::Render(std::string& out) const {
  Header(out, name_, help_, "counter");
  std::lock_guard lock(mu_);
  for (const auto& [labels, value] : values_) {
    out += name_ + LabelText(label_names_, labels) + " " + FormatNumber(value) + "\n";
  }
}

Gauge::Gauge(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void Gauge::Set(const LabelValues& labels, double value) {
  std::lock_guard lock(mu_);
  values_[labels] = value;
}

void Gauge::ReplaceAll(std::map<LabelValues, double> values) {
  std::lock_guard lock(mu_);
  values_ = std::move(values);
}

double Gauge::Value(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0 : it->second;
}

void Gauge::Render(std::string& out) const {
  Header(out, name_, help_, "gauge");
  std::lock_guard lock(mu_);
  for (const auto& [labels, value] : values_) {
    out += name_ + LabelText(label_names_, labels) + " " + FormatNumber(value) + "\n";
  }
}

Histogram::Histogram(std::string name, std::string help, std::vector<std::string> label_names,
                     std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

void Histogram::Observe(const LabelValues& labels, double value) {
  size_t bucket = bounds_.size();
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      bucket = i;
      break;
    }
  }
  std::lock_guard lock(mu_);
  Series& series = series_[labels];
  if (series.buckets.empty()) series.buckets.assign(bounds_.size() + 1, 0);
  ++series.buckets[bucket];
  series.sum += value;
  ++series.count;
}

uint64_t Histogram::Count(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

void Histogram::Render(std::string& out) const {
  Header(out, name_, help_, "histogram");
  std::lock_guard lock(mu_);
  for (const auto& [labels, series] : series_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += series.buckets[i];
      std::string le = i < bounds_.size() ? FormatNumber(bounds_[i]) : "+Inf";
      out += name_ + "_bucket" + LabelText(label_names_, labels, "le=\"" + le + "\"") + " " +
             std::to_string(cumulative) + "\n";
    }
    out += name_ + "_sum" + LabelText(label_names_, labels) + " " + FormatNumber(series.sum) + "\n";
    out += name_ + "_count" + LabelText(label_names_, labels) + " " + std::to_string(series.count) +
           "\n";
  }
}

Counter* Registry::AddCounter(std::string name, std::string help, std::vector<std::string> labels) {
  std::lock_guard lock(mu_);
  counters_.push_back(
      std::make_unique<Counter>(std::move(name), std::move(help), std::move(labels)));
  order_.emplace_back(0, counters_.size() - 1);
  return counters_.back().get();
}

Gauge* Registry::AddGauge(std::string name, std::string help, std::vector<std::string> labels) {
  std::lock_guard lock(mu_);
  gauges_.push_back(std::make_unique<Gauge>(std::move(name), std::move(help), std::move(labels)));
  order_.emplace_back(1, gauges_.size() - 1);
  return gauges_.back().get();
}

Histogram* Registry::AddHistogram(std::string name, std::string help,
                                  std::vector<std::string> labels, std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  histograms_.push_back(std::make_unique<Histogram>(std::move(name), std::move(help),
                                                    std::move(labels), std::move(bounds)));
  order_.emplace_back(2, histograms_.size() - 1);
  return histograms_.back().get();
}

std::string Registry::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [type, index] : order_) {
    if (type == 0) counters_[index]->Render(out);
    if (type == 1) gauges_[index]->Render(out);
    if (type == 2) histograms_[index]->Render(out);
  }
  return out;
}

}  // namespace gpupool::metrics
