#!/usr/bin/env bash
# `make bench`: every benchmark behind docs/BENCHMARKS.md, in turn, with the machine and the
# commit printed first. Takes about 10 minutes on a quiet 2-core machine; nothing is asserted,
# the figures are for the document.
#   scripts/run-bench.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cd "$root"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo "== scheduler: 10,000 nodes, 100,000 pending pods (fgd, gpu-packing, best-fit)"
for policy in fgd gpu-packing best-fit; do "$build/bench/scheduler_bench" --policy "$policy"; done
echo "== scheduler: scaling at 1k, 10k and 50k nodes (fgd)"
"$build/bench/scheduler_bench" --scaling
echo "== scheduler: placement quality on the openb trace"
"$build/bench/scheduler_bench" --openb data/alibaba-gpu-v2023-openb
echo "== autoscaler: machine-pool what-if at scale"
"$build/bench/autoscaler_bench"
echo "== submission pipeline (in process, one core)"
taskset -c 0 "$build/bench/gpupool_submit_bench" --benchmark_min_time=1 \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
echo "== server over HTTP (wrk on loopback; SQLite, then PostgreSQL)"
bash scripts/bench-http.sh "$build" 8
