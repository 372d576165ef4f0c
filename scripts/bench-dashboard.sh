#!/usr/bin/env bash
# The dashboard at scale: writes 10,000 nodes and 100,000 workflows into a fresh SQLite store
# (bench/dashboard_data.cc), starts `gpupool serve` on it with its scheduling loop, and measures
# each page's API answer (p50/p99) and, in headless Chromium, first paint and page changes
# (web/tests/bench.mjs). Not a test: it prints figures for docs/BENCHMARKS.md.
#   scripts/bench-dashboard.sh [BUILD_DIR] [NODES] [WORKFLOWS] [RUNNING] [PENDING]
set -euo pipefail
build_dir=$(cd "${1:-build}" && pwd)
nodes=${2:-10000}
workflows=${3:-100000}
running=${4:-6000}
pending=${5:-4000}
root=$(cd "$(dirname "$0")/.." && pwd)
# The data tool is left out of the default build (bench/CMakeLists.txt): build it if missing.
cmake --build "$build_dir" --target gpupool-dashboard-data >/dev/null
dir=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; wait "${pid:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT

start=$(date +%s.%N)
"$build_dir/bench/gpupool-dashboard-data" --db "sqlite:$dir/big.db" --nodes "$nodes" \
  --workflows "$workflows" --running "$running" --pending "$pending"
echo "data written in $(echo "$(date +%s.%N) - $start" | bc) s"
echo '{"apiVersion": "v1", "kind": "NodeList", "items": []}' >"$dir/no-nodes.json"
"$build_dir/bin/gpupool" serve --listen 127.0.0.1:0 --db "sqlite:$dir/big.db" \
  --backend "sim:$dir/no-nodes.json" --auth dev --history-interval 5s >"$dir/out.log" 2>"$dir/err.log" &
pid=$!
started=$(date +%s)
for _ in $(seq 1 600); do
  url=$(grep -o 'http://[0-9.:]*' "$dir/out.log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "gpupool serve did not start"; cat "$dir/err.log"; exit 1; }
# Let the scheduling loop run a few steps (the views then have its state).
sleep 20
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
# 200 requests per endpoint: the p99 is then the 198th of 200, not the slowest one.
(cd "$root/web" && node tests/bench.mjs "$url" "${BENCH_REQUESTS:-200}")
# The machine's load at the end too: on a shared machine it moves within a run. And the CPU
# time the server used (its scheduling loop steps all along, beside the requests).
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$pid/stat")
echo "gpupool serve: $cpu s CPU in its $(($(date +%s) - started)) s"
curl -s "$url/metrics" | awk '/^gpupool_scheduling_cycle_seconds_sum/ {sum = $2}
  /^gpupool_scheduling_cycle_seconds_count/ {count = $2}
  END {if (count) printf "scheduling steps: %d, %.2f s each on average\n", count, sum / count}'
