#include "replay/report.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace gpupool::replay {
namespace {

// Colours that stay apart for the usual colour-vision deficiencies (Okabe-Ito).
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#F0E442"};

std::string ShortNumber(double v, const char* format = "%.4g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One value per sample of a run's series.
using Pick = std::function<double(const Series&, size_t)>;

double PoolSum(const Series& s, size_t i, std::vector<double> PoolSeries::*field) {
  double sum = 0;
  for (const auto& [name, pool] : s.node_pools) {
    if (i < (pool.*field).size()) sum += (pool.*field)[i];
  }
  return sum;
}

// A line chart of `pick` over simulated time (hours), one polyline per run.
std::string Chart(const std::string& title, const std::string& unit,
                  const std::vector<PolicyRun>& runs, const Pick& pick) {
  constexpr double kWidth = 760, kHeight = 240, kLeft = 60, kRight = 150, kTop = 28, kBottom = 36;
  double t_max = 0, y_max = 0;
  for (const PolicyRun& run : runs) {
    for (size_t i = 0; i < run.series.t_ms.size(); ++i) {
      t_max = std::max(t_max, static_cast<double>(run.series.t_ms[i]) / 3.6e6);
      y_max = std::max(y_max, pick(run.series, i));
    }
  }
  if (t_max <= 0) t_max = 1;
  if (y_max <= 0) y_max = 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](double t) { return kLeft + t / t_max * plot_w; };
  auto y_of = [&](double v) { return kTop + plot_h - v / y_max * plot_h; };
  std::string svg = "<figure><svg role=\"img\" viewBox=\"0 0 " + ShortNumber(kWidth) + " " +
                    ShortNumber(kHeight) + "\" width=\"" + ShortNumber(kWidth) + "\" height=\"" +
                    ShortNumber(kHeight) + "\"><title>" + HtmlEscape(title) + "</title>";
  svg += "<text x=\"" + ShortNumber(kLeft) + "\" y=\"18\" class=\"t\">" + HtmlEscape(title) +
         "</text>";
  // Axes with their extremes and the middle.
  svg += "<path class=\"ax\" d=\"M" + ShortNumber(kLeft) + " " + ShortNumber(kTop) + "V" +
         ShortNumber(kTop + plot_h) + "H" + ShortNumber(kLeft + plot_w) + "\"/>";
  for (double f : {0.0, 0.5, 1.0}) {
    svg += "<text class=\"l\" x=\"" + ShortNumber(kLeft - 6) + "\" y=\"" +
           ShortNumber(y_of(f * y_max) + 4) + "\" text-anchor=\"end\">" + ShortNumber(f * y_max) +
           "</text>";
    svg += "<text class=\"l\" x=\"" + ShortNumber(x_of(f * t_max)) + "\" y=\"" +
           ShortNumber(kTop + plot_h + 16) + "\" text-anchor=\"middle\">" + ShortNumber(f * t_max) +
           " h</text>";
  }
  svg += "<text class=\"l\" x=\"" + ShortNumber(kLeft - 6) + "\" y=\"" + ShortNumber(kTop - 6) +
         "\" text-anchor=\"end\">" + HtmlEscape(unit) + "</text>";
  for (size_t r = 0; r < runs.size(); ++r) {
    const Series& s = runs[r].series;
    const char* colour = kColours[r % std::size(kColours)];
    std::string points;
    for (size_t i = 0; i < s.t_ms.size(); ++i) {
      points += ShortNumber(x_of(static_cast<double>(s.t_ms[i]) / 3.6e6), "%.1f") + "," +
                ShortNumber(y_of(pick(s, i)), "%.1f") + " ";
    }
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
           "\" stroke-width=\"1.5\" points=\"" + points + "\"><title>" +
           HtmlEscape(runs[r].policy) + "</title></polyline>";
    const double ly = kTop + 14 + static_cast<double>(r) * 18;
    svg += "<rect x=\"" + ShortNumber(kLeft + plot_w + 14) + "\" y=\"" + ShortNumber(ly - 9) +
           "\" width=\"12\" height=\"4\" fill=\"" + colour + "\"/><text class=\"l\" x=\"" +
           ShortNumber(kLeft + plot_w + 32) + "\" y=\"" + ShortNumber(ly - 4) + "\">" +
           HtmlEscape(runs[r].policy) + "</text>";
  }
  return svg + "</svg></figure>\n";
}

std::string InputsTable(const RunInputs& in) {
  std::string files;
  for (const std::string& f : in.scenario_files) files += (files.empty() ? "" : ", ") + f;
  std::string policies;
  for (const std::string& p : in.policies) policies += (policies.empty() ? "" : ", ") + p;
  const std::pair<std::string, std::string> rows[] = {
      {"scenario files", files},
      {"trace", in.trace_file + " (" + in.trace_format + ")"},
      {"jobs / pods", std::to_string(in.trace_jobs) + " / " + std::to_string(in.trace_pods)},
      {"nodes, queues, node pools, machine pools",
       std::to_string(in.nodes) + ", " + std::to_string(in.queues) + ", " +
           std::to_string(in.node_pools) + ", " + std::to_string(in.machine_pools)},
      {"policies", policies},
      {"cycle period", ShortNumber(static_cast<double>(in.options.cycle_period_ms) / 1000) + " s"},
  };
  std::string html = "<table>";
  for (const auto& [key, value] : rows) {
    html += "<tr><th>" + HtmlEscape(key) + "</th><td>" + HtmlEscape(value) + "</td></tr>";
  }
  return html + "</table>\n";
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HtmlReport(const RunInputs& inputs, const std::vector<PolicyRun>& runs) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>gpupool replay: " +
      HtmlEscape(inputs.trace_file) +
      "</title><style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}"
      "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px;"
      "text-align:left}pre{background:#f6f6f6;padding:1em;overflow-x:auto}"
      ".ax{fill:none;stroke:#888}.t{font-weight:600;font-size:14px}.l{font-size:11px;fill:#444}"
      "figure{margin:1em 0}</style></head><body>\n<h1>gpupool replay</h1>\n<h2>Inputs</h2>\n";
  html += InputsTable(inputs);
  html += "<h2>Over time</h2>\n";
  html += Chart("GPU allocation, all node pools", "%", runs, [](const Series& s, size_t i) {
    const double capacity = PoolSum(s, i, &PoolSeries::capacity_gpus);
    return capacity > 0 ? 100 * PoolSum(s, i, &PoolSeries::allocated_gpus) / capacity : 0.0;
  });
  html += Chart("Fragmentation (FGD), all node pools", "GPUs", runs, [](const Series& s, size_t i) {
    return PoolSum(s, i, &PoolSeries::fragmentation_gpus);
  });
  html += Chart("Pending jobs", "jobs", runs, [](const Series& s, size_t i) {
    return i < s.pending_jobs.size() ? static_cast<double>(s.pending_jobs[i]) : 0.0;
  });
  html += Chart("Running jobs", "jobs", runs, [](const Series& s, size_t i) {
    return i < s.running_jobs.size() ? static_cast<double>(s.running_jobs[i]) : 0.0;
  });
  html += Chart("Pending GPUs", "GPUs", runs, [](const Series& s, size_t i) {
    return i < s.pending_gpus.size() ? s.pending_gpus[i] : 0.0;
  });
  html += "<h2>Summary</h2>\n<pre>" + HtmlEscape(ResultsToTable(runs)) + "</pre>\n";
  return html + "</body></html>\n";
}

}  // namespace gpupool::replay
