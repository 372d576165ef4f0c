#!/usr/bin/env bash
# Instructions the server executes per submission (valgrind --tool=callgrind), a figure that does
# not move with the machine's speed: gpupool-serve on SQLite under callgrind, wrk submitting a
# one-task workflow on 8 connections for 15 s (about 1,500 submissions), then the program's total
# instruction count divided by the workflows stored (startup included, amortised).
#   scripts/ir-per-submission.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
serve="$build/src/app/gpupool-serve"
[ -x "$serve" ] || { echo "build $serve first"; exit 1; }
for tool in valgrind wrk sqlite3 callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed"; exit 1; }
done
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
cluster="$root/scripts/bench/one-node-cluster.yaml"
"$root/scripts/bench/submit-lua.sh" "$root/scripts/bench/one-task-workflow.yaml" \
  "Bearer dev:bench:osmo-admin" >"$work/submit.lua"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" "$serve" serve \
  --listen "127.0.0.1:$port" --db "sqlite:$work/bench.db" --backend "sim:$cluster" \
  --auth dev --no-scheduler >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
wrk -t1 -c8 -d15s -s "$work/submit.lua" "http://127.0.0.1:$port/api/pool/default/workflow" >/dev/null
kill -INT "$pid"
wait "$pid" 2>/dev/null || true
n=$(sqlite3 "$work/bench.db" "SELECT count(*) FROM workflows")
total=$(callgrind_annotate "$work/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "submissions=$n instructions=$total per_submission=$((total / n))"
