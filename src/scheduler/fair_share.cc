#include "scheduler/fair_share.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "common/saturating.h"

namespace gpupool::scheduler {
namespace {

__extension__ using Int128 = __int128;  // exact products of int64 amounts

int64_t Requestable(const SiblingInput& s) {
  int64_t demand = std::max<int64_t>(0, s.demand);
  return s.limit == kUnlimitedAmount ? demand : std::min(demand, s.limit);
}

// Weighted water-filling of `available` among `members` (indices), in rounds of whole units.
// Returns what is left; records fractional remainders for the leftover pass.
int64_t WaterFill(int64_t available, const std::vector<int>& members,
                  std::span<const SiblingInput> siblings, std::vector<int64_t>& share,
                  std::vector<double>& remainder, int64_t unit, int64_t priority,
                  FairShareTrace* trace) {
  std::vector<bool> satisfied(siblings.size(), false);
  while (available > 0) {
    Int128 weight_sum = 0;
    for (int i : members) {
      if (satisfied[i] || siblings[i].over_quota_weight <= 0) continue;
      if (share[i] >= Requestable(siblings[i])) {
        satisfied[i] = true;
        continue;
      }
      weight_sum += siblings[i].over_quota_weight;
    }
    if (weight_sum == 0) break;
    const int64_t round_start = available;
    FairShareTrace::Round* round = nullptr;
    if (trace != nullptr) {
      trace->rounds.push_back({priority, available, static_cast<int64_t>(weight_sum),
                               std::vector<int64_t>(siblings.size(), 0)});
      round = &trace->rounds.back();
    }
    bool someone_satisfied = false;
    int64_t given_total = 0;
    for (int i : members) {
      if (satisfied[i] || siblings[i].over_quota_weight <= 0) continue;
      const int64_t need = Requestable(siblings[i]) - share[i];
      const Int128 numerator = Int128(round_start) * siblings[i].over_quota_weight;
      const Int128 denominator = weight_sum * unit;
      // Exact slice = numerator / weight_sum (milli-units).
      if (Int128(need) * weight_sum <= numerator) {
        share[i] += need;
        given_total += need;
        if (round != nullptr) round->given[i] = need;
        satisfied[i] = true;
        someone_satisfied = true;
        remainder[i] = 0;
        continue;
      }
      const int64_t units = static_cast<int64_t>(numerator / denominator);
      share[i] += units * unit;
      given_total += units * unit;
      if (round != nullptr) round->given[i] = units * unit;
      remainder[i] =
          static_cast<double>(numerator % denominator) / static_cast<double>(denominator);
    }
    available -= given_total;
    if (!someone_satisfied) break;
  }
  return available;
}

}  // namespace

std::vector<int64_t> DivideAmongSiblings(int64_t capacity, std::span<const SiblingInput> siblings,
                                         int64_t unit, FairShareTrace* trace) {
  const int n = static_cast<int>(siblings.size());
  std::vector<int64_t> share(n, 0);
  int64_t available = std::max<int64_t>(0, capacity);
  if (trace != nullptr) {
    *trace = FairShareTrace{};
    trace->leftover.assign(n, 0);
  }
  for (int i = 0; i < n; ++i) {
    const int64_t requestable = Requestable(siblings[i]);
    share[i] = siblings[i].deserved == kUnlimitedAmount
                   ? requestable
                   : std::min(std::max<int64_t>(0, siblings[i].deserved), requestable);
    available = SaturatingSub(available, share[i]);
    if (trace != nullptr) {
      trace->requestable.push_back(requestable);
      trace->deserved_pass.push_back(share[i]);
    }
  }
  if (trace != nullptr) trace->left_after_deserved = available;
  if (available <= 0) return share;
  // Priority tiers, highest first; inside a tier, input order.
  std::map<int64_t, std::vector<int>, std::greater<>> tiers;
  for (int i = 0; i < n; ++i) tiers[siblings[i].priority].push_back(i);
  std::vector<double> remainder(n, 0);
  for (const auto& [priority, members] : tiers) {
    if (available <= 0) break;
    available = WaterFill(available, members, siblings, share, remainder, unit, priority, trace);
    // Leftover whole units to the largest remainders of this tier.
    std::vector<int> order;
    for (int i : members) {
      if (remainder[i] > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return remainder[a] > remainder[b]; });
    for (int i : order) {
      if (available <= 0) break;
      const int64_t need = Requestable(siblings[i]) - share[i];
      const int64_t give = std::min({unit, available, need});
      if (give <= 0) continue;
      share[i] += give;
      available -= give;
      if (trace != nullptr) trace->leftover[i] += give;
    }
  }
  if (trace != nullptr) trace->unused = std::max<int64_t>(0, available);
  return share;
}

std::vector<int64_t> ComputeFairShares(int64_t capacity, std::span<const FairShareQueue> queues,
                                       int64_t unit) {
  const int n = static_cast<int>(queues.size());
  std::vector<std::vector<int>> children(n + 1);  // n = the virtual root
  for (int i = 0; i < n; ++i) {
    int parent = queues[i].parent;
    children[parent < 0 || parent >= n ? n : parent].push_back(i);
  }
  // Subtree demand (own + children), iteratively in post-order.
  std::vector<int64_t> subtree(n, 0);
  std::vector<int> order;
  std::vector<int> stack = {n};
  while (!stack.empty()) {
    int node = stack.back();
    stack.pop_back();
    if (node < n) order.push_back(node);
    for (int child : children[node]) stack.push_back(child);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int q = *it;
    subtree[q] = SaturatingAdd(subtree[q], std::max<int64_t>(0, queues[q].demand));
    if (queues[q].parent >= 0 && queues[q].parent < n) {
      subtree[queues[q].parent] = SaturatingAdd(subtree[queues[q].parent], subtree[q]);
    }
  }
  std::vector<int64_t> share(n, 0);
  // Top-down: each parent's share is divided among its children. A parent's own pods (if any)
  // compete as an extra sibling with the parent's own settings but no quota of its own.
  std::vector<std::pair<int, int64_t>> work = {{n, capacity}};
  while (!work.empty()) {
    auto [node, amount] = work.back();
    work.pop_back();
    const std::vector<int>& kids = children[node];
    if (kids.empty()) continue;
    std::vector<SiblingInput> input;
    for (int k : kids) {
      input.push_back({queues[k].priority, queues[k].deserved, queues[k].limit,
                       queues[k].over_quota_weight, subtree[k]});
    }
    if (node < n && queues[node].demand > 0) {
      input.push_back({queues[node].priority, 0, kUnlimitedAmount, 1, queues[node].demand});
    }
    std::vector<int64_t> divided = DivideAmongSiblings(amount, input, unit);
    for (size_t j = 0; j < kids.size(); ++j) {
      share[kids[j]] = divided[j];
      work.emplace_back(kids[j], divided[j]);
    }
  }
  return share;
}

}  // namespace gpupool::scheduler
