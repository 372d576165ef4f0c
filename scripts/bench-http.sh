#!/usr/bin/env bash
# HTTP load benchmark of gpupool serve with wrk (Debian's wrk 4.1) on loopback:
#   1. durable submissions: POST /api/pool/default/workflow (a one-task workflow), max throughput;
#   2. reads: GET /api/workflow/<id> (authentication, access check, store read), max throughput;
#   3. once the page cache the max-rate runs dirtied is written back (settle_page_cache), paced
#      reads and submissions at ~1,000 requests/s (wrk's delay() hook) for the p99; for
#      the paced submissions also the server's own p50/p99, its group commits' queue wait and its
#      store's write transactions' (scripts/bench/window-quantiles.py, from /metrics), and the
#      machine's CPU use;
#   4. the same two open loop (gpupool-http-load, bench/http_load.cc): 1,000 requests/s as
#      Poisson arrivals (from many users who do not coordinate), each request's latency counted
#      from when it was due. wrk's pacing is closed-loop: a stall holds back the requests that
#      would have waited for it, and its connections, released together by a group commit, fall
#      into step and arrive in bursts; neither happens here.
# On SQLite (a temp file, WAL) and, when PostgreSQL is available, on PostgreSQL (started with
# scripts/pg-test-server.sh unless GPUPOOL_TEST_PG_URL is set).
#   scripts/bench-http.sh [BUILD_DIR] [DURATION_SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
duration=${2:-10}
serve="$build/src/app/gpupool-serve"
[ -x "$serve" ] || { echo "build $serve first (cmake --build $build --target gpupool-serve)"; exit 1; }
load="$build/bench/gpupool-http-load"
[ -x "$load" ] || { echo "build $load first (cmake --build $build --target gpupool-http-load)"; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${started_pg:-0}" = 1 ]; then pg_test_server_stop; fi
  rm -rf "$work"
}
trap cleanup EXIT

cp "$root/scripts/bench/one-node-cluster.yaml" "$work/cluster.yaml"
cp "$root/scripts/bench/one-task-workflow.yaml" "$work/workflow.yaml"
token="Bearer dev:bench:osmo-admin"
"$root/scripts/bench/submit-lua.sh" "$work/workflow.yaml" "$token" >"$work/submit.lua"
cat >"$work/read.lua" <<LUA
wrk.headers["Authorization"] = "$token"
LUA
# ~1,000 requests/s in total: each connection waits 10 ms after each response (wrk's delay()), so
# a connection offers 1 / (10 ms + latency): 11 connections for reads (~0.5 ms latency), 14 for
# submissions (~4 ms). The achieved rate is printed; it drops when latency grows.
cat >"$work/paced.lua" <<LUA
wrk.headers["Authorization"] = "$token"
function delay() return 10 end
LUA
{ cat "$work/submit.lua"; echo 'function delay() return 10 end'; } >"$work/paced_submit.lua"
cat >"$work/report.lua" <<'LUA'
done = function(summary, latency, requests)
  io.write(string.format("RESULT requests/s=%.0f p50=%.2fms p99=%.2fms errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout, summary.errors.status))
end
LUA
for f in submit read paced paced_submit; do cat "$work/report.lua" >>"$work/$f.lua"; done

# CPU use of the whole machine between two copies of /proc/stat's first line: busy (not idle, not
# waiting for I/O) and stolen by the hypervisor, in % of all cores.
cpu_use() {
  paste "$1" "$2" | awk '{ n = (NF - 2) / 2; total = 0
    for (i = 2; i <= n + 1; i++) { d[i - 1] = $(i + n + 1) - $i; total += d[i - 1] }
    if (total <= 0) { print "n/a"; exit }
    printf "busy %.0f %%, steal %.1f %%\n", 100 * (total - d[4] - d[5]) / total, 100 * d[8] / total }'
}

run_store() {
  local label=$1 db=$2 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$serve" serve --listen "127.0.0.1:$port" --db "$db" --backend "sim:$work/cluster.yaml" \
    --auth dev --no-scheduler --threads 64 >"$work/$label.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  local url="http://127.0.0.1:$port"
  echo "== $label ($db)"
  echo -n "submissions (64 connections, 2 threads, ${duration}s): "
  wrk -t2 -c64 -d"${duration}s" -s "$work/submit.lua" "$url/api/pool/default/workflow" | grep RESULT
  local id
  id=$(curl -fsS -H "Authorization: $token" -H 'Content-Type: application/yaml' \
    --data-binary @"$work/workflow.yaml" "$url/api/pool/default/workflow" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["workflow_id"])')
  echo -n "reads GET /api/workflow/$id (64 connections, ${duration}s): "
  wrk -t2 -c64 -d"${duration}s" -s "$work/read.lua" "$url/api/workflow/$id" | grep RESULT
  # Reads spread over 1,000 workflows (of those the submissions created), in random order: the
  # version checks of concurrent reads then name different workflows. Each wrk thread formats the
  # 1,000 requests once (init) and picks one per request: formatting each request anew cost wrk
  # ~15-18 µs of the two shared cores per read, and the figure ~12 % (docs/benchmarks/server.md).
  curl -fsS -H "Authorization: $token" "$url/api/workflow?limit=1000" |
    python3 -c 'import json,sys
ids = [w["id"] for w in json.load(sys.stdin)["workflows"]]
print("ids = {" + ",".join(json.dumps(i) for i in ids) + "}")' >"$work/many.lua"
  cat >>"$work/many.lua" <<LUA
wrk.headers["Authorization"] = "$token"
local requests = {}
init = function(args)
  for i, id in ipairs(ids) do requests[i] = wrk.format("GET", "/api/workflow/" .. id) end
end
request = function() return requests[math.random(#requests)] end
LUA
  cat "$work/report.lua" >>"$work/many.lua"
  echo -n "reads of 1,000 workflows, random (64 connections, ${duration}s): "
  wrk -t2 -c64 -d"${duration}s" -s "$work/many.lua" "$url" | grep RESULT
  settle_page_cache
  echo -n "paced reads (~1,000/s, 11 connections, ${duration}s): "
  wrk -t2 -c11 -d"${duration}s" -s "$work/paced.lua" "$url/api/workflow/$id" | grep RESULT
  window_start "$url"
  echo -n "paced submissions (~1,000/s, 14 connections, ${duration}s): "
  wrk -t2 -c14 -d"${duration}s" -s "$work/paced_submit.lua" "$url/api/pool/default/workflow" | grep RESULT
  window_report "$url"
  echo -n "open-loop reads (1,000/s Poisson, ${duration}s, latency from due): "
  "$load" --url "$url/api/workflow/$id" --header "Authorization: $token" --rate 1000 \
    --arrivals poisson --duration "$duration" | grep RESULT
  window_start "$url"
  echo -n "open-loop submissions (1,000/s Poisson, ${duration}s, latency from due): "
  "$load" --url "$url/api/pool/default/workflow" --method POST --body-file "$work/workflow.yaml" \
    --content-type application/yaml --header "Authorization: $token" --rate 1000 \
    --arrivals poisson --duration "$duration" | grep RESULT
  window_report "$url"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
}

# The paced windows measure the steady state at ~1,000 requests/s. The max-rate submissions leave
# ~100-160 MB of new table and index pages in the page cache (PostgreSQL writes a file's new pages
# as it extends it); the kernel writes them back 30 s later (vm.dirty_expire_centisecs), inside
# whichever paced window runs then, and commits stall meanwhile (docs/benchmarks/server.md round
# 9). So they are written back first, and how much there was is printed.
settle_page_cache() {
  local dirty_mb started
  dirty_mb=$(awk '/^Dirty:/ { printf "%.0f", $2 / 1024 }' /proc/meminfo)
  started=$(date +%s%N)
  sync
  echo "page cache dirtied by the max-rate runs, written back before the paced ones: ${dirty_mb} MB in $((($(date +%s%N) - started) / 1000000)) ms"
}

# A window of paced submissions: /metrics and /proc/stat before and after, then where the time
# went (the server's own timing and its store's write transactions) and the machine's CPU use.
window_start() {
  curl -fsS "$1/metrics" >"$work/before.prom"
  head -n 1 /proc/stat >"$work/before.stat"
}
window_report() {
  curl -fsS "$1/metrics" >"$work/after.prom"
  head -n 1 /proc/stat >"$work/after.stat"
  echo -n "  during them: "
  python3 "$root/scripts/bench/window-quantiles.py" "$work/before.prom" "$work/after.prom"
  echo "  the machine then (all processes, the client and PostgreSQL included): $(cpu_use "$work/before.stat" "$work/after.stat")"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
run_store sqlite "sqlite:$work/bench.db"
if [ -z "${GPUPOOL_TEST_PG_URL:-}" ] && [ -f "$root/scripts/pg-test-server.sh" ]; then
  # shellcheck source=/dev/null
  source "$root/scripts/pg-test-server.sh"
  if pg_test_server_start >/dev/null 2>&1; then started_pg=1; fi
fi
if [ -n "${GPUPOOL_TEST_PG_URL:-}" ]; then
  run_store postgresql "$GPUPOOL_TEST_PG_URL"
else
  echo "== postgresql: not available, skipped"
fi
