// What a machine-pool what-if prints: AutoscaleResultToJson and AutoscaleResultToTable
// (autoscaler.h), apart from the simulation that fills the result.
#include <string>

#include "autoscaler/autoscaler.h"
#include "common/strings.h"
#include "common/table.h"
#include "model/duration.h"

namespace gpupool::autoscaler {

using Json = nlohmann::ordered_json;

Json AutoscaleResultToJson(const AutoscaleResult& result) {
  Json out = scheduler::ScheduleResultToJson(result.cycle);
  if (!result.has_machine_pools) return out;
  Json interruptions = Json::array();
  for (const Interruption& i : result.interruptions) {
    Json stops = Json::array();
    for (const PodStop& stop : i.stops) {
      Json entry = {{"pod", stop.pod},
                    {"toldAfterSeconds", stop.told_ms / 1000},
                    {"gracePeriodSeconds", stop.grace_seconds},
                    {"goneAfterSeconds", stop.end_ms / 1000}};
      if (!stop.pre_stop.empty()) entry["preStop"] = stop.pre_stop;
      if (!stop.kept_by.empty()) entry["keptBy"] = stop.kept_by;
      stops.push_back(std::move(entry));
    }
    interruptions.push_back({{"node", i.node},
                             {"machinePool", i.machine_pool},
                             {"noticeSeconds", i.notice_seconds},
                             {"evictedPods", i.pods},
                             {"drain", std::move(stops)}});
  }
  out["interruptions"] = std::move(interruptions);
  Json up = Json::array();
  for (const ScaleUp& s : result.scale_up) {
    up.push_back({{"machinePool", s.machine_pool},
                  {"instanceType", s.instance_type},
                  {"capacityType", model::CapacityTypeName(s.capacity_type)},
                  {"from", s.current},
                  {"to", s.target},
                  {"reason", s.reason},
                  {"nodes", s.nodes},
                  {"pods", s.pods},
                  {"addedHourlyCost", model::FormatPriceMicros(s.added_hourly_price_micros)}});
  }
  out["scaleUp"] = std::move(up);
  Json down = Json::array();
  for (const ScaleDown& s : result.scale_down) {
    down.push_back({{"machinePool", s.machine_pool}, {"node", s.node}, {"reason", s.reason}});
  }
  out["scaleDown"] = std::move(down);
  Json not_scaled = Json::array();
  for (const NotScaled& n : result.not_scaled) {
    not_scaled.push_back({{"pod", n.pod}, {"reason", n.reason}});
  }
  out["notScaled"] = std::move(not_scaled);
  Json cost = Json::object();
  int64_t total = 0, on_demand = 0;
  for (const PoolCost& c : result.cost) {
    cost[c.machine_pool] = {
        {"capacityType", model::CapacityTypeName(c.capacity_type)},
        {"nodes", c.nodes},
        {"hourly", model::FormatPriceMicros(c.hourly_micros)},
        {"onDemandHourly", model::FormatPriceMicros(c.on_demand_hourly_micros)},
        {"hourlySaving", model::FormatPriceMicros(c.on_demand_hourly_micros - c.hourly_micros)}};
    total += c.hourly_micros;
    on_demand += c.on_demand_hourly_micros;
  }
  Json queues = Json::object();
  for (const QueueCost& q : result.queue_cost) {
    queues[q.queue] = model::FormatPriceMicros(q.hourly_micros);
  }
  out["cost"] = {{"machinePools", std::move(cost)},
                 {"queues", std::move(queues)},
                 {"hourly", model::FormatPriceMicros(total)},
                 {"onDemandHourly", model::FormatPriceMicros(on_demand)},
                 {"hourlySaving", model::FormatPriceMicros(on_demand - total)}};
  return out;
}

std::string AutoscaleResultToTable(const AutoscaleResult& result) {
  std::string out = scheduler::ScheduleResultToTable(result.cycle);
  if (!result.has_machine_pools) return out;
  if (!result.interruptions.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"NODE", "MACHINE POOL", "NOTICE", "EVICTED PODS"}};
    for (const Interruption& i : result.interruptions) {
      rows.push_back({i.node, i.machine_pool, model::FormatDuration(i.notice_seconds),
                      i.pods.empty() ? "-" : Join(i.pods, ",")});
    }
    out += "\nSPOT INTERRUPTIONS\n" + FormatTable(rows);
  }
  std::vector<std::vector<std::string>> rows = {
      {"MACHINE POOL", "INSTANCE TYPE", "CAPACITY", "NODES", "REASON", "ADDED NODES", "$/H ADDED"}};
  for (const ScaleUp& s : result.scale_up) {
    rows.push_back({s.machine_pool, s.instance_type,
                    std::string(model::CapacityTypeName(s.capacity_type)),
                    std::to_string(s.current) + " -> " + std::to_string(s.target), s.reason,
                    Join(s.nodes, ","), model::FormatPriceMicros(s.added_hourly_price_micros)});
  }
  out += "\nSCALE UP (" + std::to_string(result.scale_up.size()) + ")\n" + FormatTable(rows);
  rows = {{"MACHINE POOL", "NODE", "REASON"}};
  for (const ScaleDown& s : result.scale_down) rows.push_back({s.machine_pool, s.node, s.reason});
  out += "\nSCALE DOWN (" + std::to_string(result.scale_down.size()) + ")\n" + FormatTable(rows);
  if (!result.not_scaled.empty()) {
    rows = {{"POD", "WHY NO NODE WAS ADDED"}};
    for (const NotScaled& n : result.not_scaled) rows.push_back({n.pod, n.reason});
    out += "\nNOT SCALED (" + std::to_string(result.not_scaled.size()) + ")\n" + FormatTable(rows);
  }
  rows = {{"MACHINE POOL", "CAPACITY", "NODES", "$/H", "ON-DEMAND $/H", "SAVING $/H"}};
  int64_t total = 0, on_demand = 0;
  for (const PoolCost& c : result.cost) {
    rows.push_back({c.machine_pool, std::string(model::CapacityTypeName(c.capacity_type)),
                    std::to_string(c.nodes), model::FormatPriceMicros(c.hourly_micros),
                    model::FormatPriceMicros(c.on_demand_hourly_micros),
                    model::FormatPriceMicros(c.on_demand_hourly_micros - c.hourly_micros)});
    total += c.hourly_micros;
    on_demand += c.on_demand_hourly_micros;
  }
  rows.push_back({"total", "", "", model::FormatPriceMicros(total),
                  model::FormatPriceMicros(on_demand),
                  model::FormatPriceMicros(on_demand - total)});
  out += "\nCOST\n" + FormatTable(rows);
  rows = {{"QUEUE", "$/H"}};
  for (const QueueCost& q : result.queue_cost) {
    rows.push_back({q.queue, model::FormatPriceMicros(q.hourly_micros)});
  }
  out += "\nCOST BY QUEUE (dominant share of machine-pool nodes)\n" + FormatTable(rows);
  return out;
}

}  // namespace gpupool::autoscaler
