#!/usr/bin/env bash
# gpupool vs Slurm on one loopback cluster, one after the other, the same stream of jobs.
#
#   scripts/bench-slurm.sh [NODES...]        # default: 200 1000
#   JOBS=2000 TIMEOUT_S=900 BATCH=100 HALVES="slurm gpupool" scripts/bench-slurm.sh 200
#   STREAM=openb ...: the mixed stream instead of one-GPU jobs (below)
#   KEEP_LOGS=DIR ...: copies each half's logs (slurmctld, gpupool) to DIR/<nodes>-<n>/ before
#     the cluster's directory is deleted; gpupool's log has each scheduling step of at least
#     LOG_SLOW_STEPS (default 100ms) with its parts
#
# For each cluster size, each half on a fresh cluster of NODES nodes x 8 A100s
# (scripts/slurm-test-cluster.sh), Slurm's scheduler settings printed:
#   Slurm alone: the cost of one scheduling decision without a launch (50 x `sbatch --test-only`
#     on the idle cluster, slurmctld's mean REQUEST_JOB_WILL_RUN time from sdiag); then JOBS
#     one-GPU jobs as one array (`sbatch --array=1-JOBS --gres=gpu:1 --wrap 'exec sleep 1000'`),
#     Slurm's backfill scheduler places them.
#   gpupool: `gpupool-serve serve --backend slurm:URL` on slurmrestd (JWT), the same JOBS one-GPU
#     jobs as workflows of BATCH independent tasks POSTed by 4 connections at once
#     (scripts/bench/submit-stream.py); gpupool decides and submits each job with its node.
# STREAM=openb: the first JOBS pods of the openb trace that fit a node, each with its GPUs (a
# fraction rounded up to one), CPUs (rounded up) and memory (scripts/bench/openb-shapes.py), on
# nodes of the trace's most common 8-GPU shape (96 CPUs, 384 GiB; SLURM_TEST_CPUS and
# SLURM_TEST_MEMORY_MB override). Slurm alone gets one array per distinct shape, in the order of
# each shape's first job (56 sbatch calls for 2,000 jobs); gpupool the same jobs in trace order.
# Not every job fits at 200 nodes (1,760 GPUs asked), so a half ends once no job has started
# for SETTLE_S seconds (default 20, four of Slurm's backfill intervals) and reports how many
# started and the GPUs allocated: the packing of each system, not only its speed.
# Both halves count a job as started from slurmctld's log (polling squeue would load slurmctld),
# until all that fit have started (min(JOBS, 8 x NODES)) or TIMEOUT_S, and print: time until all
# started (from the submission's start to the last start in slurmctld's log, to the millisecond),
# started per second, GPUs allocated at the end (sinfo GresUsed), CPU seconds over the stream
# (slurmctld; gpupool and slurmrestd in the gpupool half), sdiag's cycles, and for gpupool its placements and the time of its scheduling steps (/metrics:
# gpupool_task_transitions_total PENDING->SCHEDULED, gpupool_scheduling_cycle_seconds).
# Then cancel everything and stop the cluster. Needs root and about 3 MB per slurmd + 2 MB per
# running job (1,000 nodes and 2,000 jobs: ~7 GB). Numbers include the real launch cost
# (slurmstepd + a process per job); run nothing else meanwhile.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster="$root/scripts/slurm-test-cluster.sh"
jobs=${JOBS:-2000}
timeout_s=${TIMEOUT_S:-900}
batch=${BATCH:-100}
read -r -a halves <<<"${HALVES:-slurm gpupool}"
serve=${GPUPOOL_SERVE:-$root/build/src/app/gpupool-serve}
stream=${STREAM:-uniform}
settle_s=${SETTLE_S:-20}
shapes_dir=""
case "$stream" in
  uniform) ;;
  openb)
    export SLURM_TEST_CPUS=${SLURM_TEST_CPUS:-96} SLURM_TEST_MEMORY_MB=${SLURM_TEST_MEMORY_MB:-393216}
    shapes_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-bench-shapes.XXXXXX")
    for form in stream arrays; do
      python3 "$root/scripts/bench/openb-shapes.py" --jobs "$jobs" --cpus "$SLURM_TEST_CPUS" \
        --memory-mib "$SLURM_TEST_MEMORY_MB" "$form" >"$shapes_dir/$form" 2>"$shapes_dir/summary"
    done
    ;;
  *) echo "STREAM must be uniform or openb, not '$stream'" >&2; exit 2 ;;
esac
stream_name() {
  if [ "$stream" = openb ]; then
    echo "$jobs jobs of the openb trace's shapes on nodes of $SLURM_TEST_CPUS CPUs"
  else
    echo "$jobs one-GPU jobs"
  fi
}
auth="Authorization: Bearer dev:bench:osmo-admin"
placed_metric='gpupool_task_transitions_total{from="PENDING",to="SCHEDULED"}'
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then sizes=(200 1000); fi

cpu_seconds() {  # utime + stime of a process, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"
}

# How slurmctld's log says it started a job (its main scheduler, or backfill).
start_lines='sched: Allocate JobId|backfill: _start_job: Started|sched/backfill: _start_job: Started'

started_count() {  # jobs slurmctld started, from its log, gpupool's gates ($2: their ids) left out
  local starts
  starts=$(grep -cE "$start_lines" "$1" || true)
  if [ -n "${2:-}" ]; then
    starts=$((starts - $(grep -cE "(sched: Allocate JobId|_start_job: Started JobId)=(${2//,/|}) " "$1" || true)))
  fi
  echo "$starts"
}

# The ids of gpupool's gate jobs (one per burst of submissions; a gate runs until the burst is
# in), comma-separated: they are no jobs of the stream. From slurmctld's memory of recent jobs.
gate_ids() {
  scontrol -o show job 2>/dev/null | awk '/ JobName=gpupool-gate / { sub("JobId=", "", $1); ids = ids (ids ? "," : "") $1 } END { print ids }'
}

gpus_allocated() {
  sinfo -h -N -O 'NodeList:20,GresUsed:60' | awk '
    { n = split($2, parts, ","); for (i = 1; i <= n; i++) if (parts[i] ~ /^gpu/) {
        split(parts[i], f, ":"); c = f[length(f) > 2 ? 3 : 2]; sub(/\(.*/, "", c); total += c } }
    END { print total + 0 }'
}

# Starts a fresh cluster of $1 nodes (slurmrestd too when $2 = 1) and prints Slurm's settings.
start_cluster() {
  local nodes=$1 rest=$2 dir t0=$SECONDS
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-bench-slurm.XXXXXX")
  SLURM_TEST_REST=$rest nice -n 0 "$cluster" start "$nodes" "$dir" >/dev/null
  echo "cluster up in $((SECONDS - t0)) s (load: $(load))"
  current_dir=$dir
  # shellcheck disable=SC1091
  source "$dir/env"
  scontrol show config | grep -E '^(SchedulerType|SchedulerParameters|SelectType|SelectTypeParameters|DefMemPerCPU) ' |
    sed 's/^/setting: /'
  # A value slurmctld refuses is only in its log, and the setting silently keeps its default.
  grep -h 'error: Invalid' "$dir/log/slurmctld.log" | sed 's/^/setting REJECTED by slurmctld: /' || true
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

# Waits until $2 jobs have started since the log held $1 starts, or TIMEOUT_S; sets `count` and
# `gates` (gpupool's gate jobs, not counted: asked of slurmctld only once the count is reached).
wait_started() {
  local before=$1 expected=$2 log="$current_dir/log/slurmctld.log"
  local deadline=$((SECONDS + timeout_s))
  count=0
  gates=""
  local last_count=-1 settled_at=$SECONDS settled=0
  while [ "$SECONDS" -lt "$deadline" ]; do
    count=$(($(started_count "$log" "$gates") - before))
    # The mixed stream: not every job may fit, so the starts settling also ends the wait.
    if [ "$count" != "$last_count" ]; then
      last_count=$count
      settled_at=$SECONDS
    elif [ "$stream" = openb ] && [ "$count" -gt 0 ] && [ $((SECONDS - settled_at)) -ge "$settle_s" ]; then
      settled=1
    fi
    if { [ "$count" -ge "$expected" ] || [ "$settled" = 1 ]; } && [ -z "$gates" ]; then
      gates=$(gate_ids)
      if [ -n "$gates" ]; then continue; fi
    fi
    if [ "$count" -ge "$expected" ] || [ "$settled" = 1 ]; then break; fi
    sleep 0.5
  done
}

# The Unix times of the first and the $3-th job started after the log's first $2 starts, from
# slurmctld's own millisecond timestamps: the poll above only says when it saw them, half a second
# late at most, which is the size of the differences between the two halves.
start_times() {  # log before expected gates
  python3 - "$1" "$2" "$3" "${4:-}" "$start_lines" <<'PY'
import re, sys, time
from datetime import datetime
log, before, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gates = set(sys.argv[4].split(",")) if sys.argv[4] else set()
pattern = re.compile(r"^\[([0-9T:.-]+)\] (" + sys.argv[5] + r")(?: JobId)?=?([0-9]*)")
seen, first, last = 0, None, None
with open(log, errors="replace") as f:
    for line in f:
        m = pattern.match(line)
        if not m or m.group(3) in gates:
            continue
        seen += 1
        if seen <= before:
            continue
        t = time.mktime(datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timetuple())
        t += float("0." + m.group(1).rsplit(".", 1)[1])
        if first is None:
            first = t
        if seen - before == expected:
            last = t
            break
print(f"{first or 0:.3f} {last or 0:.3f}")
PY
}

# Prints when the first and the last job started, after the stream's start ($1), and sets `now`
# to the last start (when every expected job started).
print_start_times() {  # start before expected
  local first last
  # The last start is that of the count-th job (the mixed stream: those that fit started).
  read -r first last < <(start_times "$current_dir/log/slurmctld.log" "$2" "$count" "$gates")
  if [ "$last" != "0.000" ]; then
    now=$last
    echo "timeline (slurmctld's log): first job started at +$(awk -v a="$1" -v b="$first" 'BEGIN { printf "%.3f", b - a }') s, the last at +$(awk -v a="$1" -v b="$last" 'BEGIN { printf "%.3f", b - a }') s"
  fi
}

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

print_stream_figures() {  # count expected start end nodes
  local wall
  wall=$(awk -v a="$3" -v b="$4" 'BEGIN { printf "%.2f", b - a }')
  echo "started: $1 of $2 in $wall s ($(awk -v c="$1" -v w="$wall" 'BEGIN { printf "%.1f", c / w }') jobs/s; load: $(load))"
  echo "GPUs allocated at the end: $(gpus_allocated) of $(($5 * 8))"
}

print_sdiag() {
  sdiag | awk '/^Main schedule statistics/,/^Backfilling stats/ { if ($0 ~ /Total cycles|Mean cycle|Mean depth cycle|Last cycle/) print "sdiag main: " $0 }
               /^Backfilling stats/,/^Latency/ { if ($0 ~ /Total backfilled jobs \(since last slurm start\)|Total cycles|Mean cycle|Last depth cycle:/) print "sdiag backfill: " $0 }' |
    sed 's/  */ /g'
}

# How many jobs a half waits for: all that fit (one-GPU jobs), or all (the mixed stream, whose
# wait also ends when the starts settle).
expected_starts() {
  if [ "$stream" = openb ]; then echo "$jobs"; return; fi
  local fit=$(($1 * 8))
  if [ "$jobs" -lt "$fit" ]; then echo "$jobs"; else echo "$fit"; fi
}

# Slurm alone's submissions: one array of one-GPU jobs, or one array per shape of the mixed
# stream (an array Slurm refuses is said, and its jobs never start).
submit_alone() {
  if [ "$stream" != openb ]; then
    sbatch --array="1-$jobs" -p gpu --gres=gpu:1 -o /dev/null --wrap 'exec sleep 1000' >/dev/null
    return
  fi
  local n gpus cpus memory gres
  while read -r n gpus cpus memory; do
    gres=()
    if [ "$gpus" -gt 0 ]; then gres=(--gres="gpu:$gpus"); fi
    sbatch --array="1-$n" -p gpu "${gres[@]}" --cpus-per-task="$cpus" --mem="${memory}M" \
      -o /dev/null --wrap 'exec sleep 1000' >/dev/null ||
      echo "sbatch refused $n jobs of $gpus GPUs, $cpus CPUs, $memory MiB" >&2
  done <"$shapes_dir/arrays"
}

# Slurm alone: the jobs as one array in the partition; Slurm's scheduler places them.
slurm_half() {
  local nodes=$1
  echo "== Slurm alone: $nodes nodes x 8 GPUs, $(stream_name) =="
  start_cluster "$nodes" 0
  local ctld log
  ctld=$(cat "$current_dir/run/slurmctld.bgpid")
  log="$current_dir/log/slurmctld.log"

  # 1. One decision without a launch.
  sdiag --reset >/dev/null
  for _ in $(seq 1 50); do
    sbatch --test-only -p gpu --gres=gpu:1 --wrap 'exec sleep 1' >/dev/null 2>&1 || true
  done
  local will_run
  will_run=$(sdiag | awk '/REQUEST_JOB_WILL_RUN/ { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }')
  echo "test-only decision (REQUEST_JOB_WILL_RUN mean): ${will_run:-?} us ($(awk -v u="${will_run:-0}" 'BEGIN { printf "%.0f", (u > 0 ? 1e6 / u : 0) }') decisions/s)"

  # 2. The stream.
  local expected
  expected=$(expected_starts "$nodes")
  local before cpu0 start now
  before=$(started_count "$log")
  sdiag --reset >/dev/null
  cpu0=$(cpu_seconds "$ctld")
  echo "stream starts (load: $(load))"
  start=$(date +%s.%N)
  submit_alone
  wait_started "$before" "$expected"
  now=$(date +%s.%N)
  print_start_times "$start" "$before" "$expected"
  echo "slurmctld CPU over the stream: $(elapsed "$cpu0" "$(cpu_seconds "$ctld")") s"
  print_stream_figures "$count" "$expected" "$start" "$now" "$nodes"
  print_sdiag
  stop_current
  echo
}

metric() {  # sum of the samples of metric $2 (a line prefix) in the exposition file $1
  awk -v m="$2" 'index($0, m) == 1 { s += $NF } END { printf "%.6f", s + 0 }' "$1"
}

scrape() { curl -sf -H "$auth" "http://127.0.0.1:$gp_port/metrics" >"$1"; }

# gpupool: the same jobs through gpupool's server, which decides and submits each job to Slurm
# with the node it chose (slurmrestd, JWT).
gpupool_half() {
  local nodes=$1
  echo "== gpupool on Slurm: $nodes nodes x 8 GPUs, $(stream_name) =="
  start_cluster "$nodes" 1
  local dir=$current_dir ctld restd log
  ctld=$(cat "$dir/run/slurmctld.bgpid")
  # slurmrestd runs under runuser: its child is the daemon.
  restd=$(pgrep -P "$(cat "$dir/run/slurmrestd.bgpid")" || cat "$dir/run/slurmrestd.bgpid")
  log="$dir/log/slurmctld.log"
  scontrol token username="$GPUPOOL_SLURM_USER" lifespan=$((timeout_s + 3600)) >"$dir/jwt"
  gp_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env -u SLURM_JWT "$serve" serve --listen "127.0.0.1:$gp_port" --db "sqlite:$dir/gpupool.db" \
    --auth dev --backend "slurm:$GPUPOOL_SLURM_URL" --slurm-jwt-file "$dir/jwt" \
    --slurm-user "$GPUPOOL_SLURM_USER" --slurm-output-dir "$GPUPOOL_SLURM_JOBS_DIR" \
    --log-slow-steps "${LOG_SLOW_STEPS:-100ms}" >"$dir/log/gpupool.log" 2>&1 &
  gp_pid=$!
  local deadline=$((SECONDS + 120)) imported=0
  while [ "$imported" != "$nodes" ]; do
    if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$gp_pid" 2>/dev/null; then
      echo "gpupool did not import the $nodes nodes (log: $dir/log/gpupool.log)" >&2
      tail -n 20 "$dir/log/gpupool.log" >&2
      return 1
    fi
    sleep 0.5
    imported=$(curl -sf -H "$auth" "http://127.0.0.1:$gp_port/api/nodes" 2>/dev/null |
      python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))' 2>/dev/null || echo 0)
  done
  echo "gpupool serving on 127.0.0.1:$gp_port with the $nodes nodes, $(interval_setting)"

  local expected
  expected=$(expected_starts "$nodes")
  local before cpu_gp0 cpu_ctld0 cpu_restd0 start now submitted
  before=$(started_count "$log")
  sdiag --reset >/dev/null
  scrape "$dir/metrics.before"
  cpu_gp0=$(cpu_seconds "$gp_pid")
  cpu_ctld0=$(cpu_seconds "$ctld")
  cpu_restd0=$(cpu_seconds "$restd")
  echo "stream starts (load: $(load))"
  local shapes=()
  if [ "$stream" = openb ]; then shapes=(--shapes "$shapes_dir/stream"); fi
  submitted=$(python3 "$root/scripts/bench/submit-stream.py" --port "$gp_port" --jobs "$jobs" \
    --batch "$batch" --threads 4 "${shapes[@]}")
  start=$(echo "$submitted" | python3 -c 'import json, sys; print(json.load(sys.stdin)["first_request"])')
  echo "submitted: $submitted"
  # The decisions: the placement cycles from before the first submission until every job that
  # fits was placed (scraped every 0.1 s; the idle cycles in between cost a millisecond each).
  # The mixed stream: until no placement for 3 s, as not every job may fit; the decisions are
  # counted up to the scrape that saw the last placement.
  local deadline_placed=$((SECONDS + timeout_s)) placed_now=0 placed_before=-1 quiet_since=$SECONDS
  while [ "${placed_now%.*}" -lt "$expected" ] && [ "$SECONDS" -lt "$deadline_placed" ]; do
    sleep 0.1
    scrape "$dir/metrics.placed"
    placed_now=$(elapsed "$(metric "$dir/metrics.before" "$placed_metric")" \
      "$(metric "$dir/metrics.placed" "$placed_metric")")
    if [ "$placed_now" != "$placed_before" ]; then
      placed_before=$placed_now
      quiet_since=$SECONDS
      cp "$dir/metrics.placed" "$dir/metrics.last-placement"
    elif [ "$stream" = openb ] && [ "${placed_now%.*}" -gt 0 ] && [ $((SECONDS - quiet_since)) -ge 3 ]; then
      break
    fi
  done
  local decision_cycles decision_cpu
  decision_cycles=$(elapsed "$(metric "$dir/metrics.before" gpupool_placement_cycle_cpu_seconds_count)" \
    "$(metric "$dir/metrics.last-placement" gpupool_placement_cycle_cpu_seconds_count)")
  decision_cpu=$(awk -v a="$(metric "$dir/metrics.before" gpupool_placement_cycle_cpu_seconds_sum)" \
    -v b="$(metric "$dir/metrics.last-placement" gpupool_placement_cycle_cpu_seconds_sum)" 'BEGIN { printf "%.4f", b - a }')
  echo "gpupool decisions: $placed_now placed by $decision_cycles placement cycles using $decision_cpu s of CPU ($(awk -v p="$placed_now" -v s="$decision_cpu" 'BEGIN { printf "%.0f", (s > 0 ? p / s : 0) }') placements per CPU second)"
  wait_started "$before" "$expected"
  now=$(date +%s.%N)
  print_start_times "$start" "$before" "$expected"
  echo "CPU over the stream: gpupool $(elapsed "$cpu_gp0" "$(cpu_seconds "$gp_pid")") s, slurmctld $(elapsed "$cpu_ctld0" "$(cpu_seconds "$ctld")") s, slurmrestd $(elapsed "$cpu_restd0" "$(cpu_seconds "$restd")") s"
  print_stream_figures "$count" "$expected" "$start" "$now" "$nodes"
  scrape "$dir/metrics.after"
  local placed steps step_s
  placed=$(elapsed "$(metric "$dir/metrics.before" "$placed_metric")" \
    "$(metric "$dir/metrics.after" "$placed_metric")")
  steps=$(elapsed "$(metric "$dir/metrics.before" gpupool_scheduling_cycle_seconds_count)" \
    "$(metric "$dir/metrics.after" gpupool_scheduling_cycle_seconds_count)")
  step_s=$(awk -v a="$(metric "$dir/metrics.before" gpupool_scheduling_cycle_seconds_sum)" \
    -v b="$(metric "$dir/metrics.after" gpupool_scheduling_cycle_seconds_sum)" 'BEGIN { printf "%.3f", b - a }')
  local cycle_cpu
  cycle_cpu=$(awk -v a="$(metric "$dir/metrics.before" gpupool_placement_cycle_cpu_seconds_sum)" \
    -v b="$(metric "$dir/metrics.after" gpupool_placement_cycle_cpu_seconds_sum)" 'BEGIN { printf "%.4f", b - a }')
  echo "gpupool over the whole stream: $placed placed; $steps scheduling steps taking $step_s s (wall) in all, their placement cycles $cycle_cpu s of CPU"
  print_sdiag
  stop_gpupool
  stop_current
  echo
}

interval_setting() { echo "scheduling step period 200ms (default), node sync 5s (default)"; }

gp_pid=""
gp_port=""
stop_gpupool() {
  if [ -n "$gp_pid" ]; then
    kill "$gp_pid" 2>/dev/null || true
    wait "$gp_pid" 2>/dev/null || true
    gp_pid=""
  fi
}

run_size() {
  local half
  for half in "${halves[@]}"; do "${half}_half" "$1"; done
}

current_dir=""
stop_current() {  # cancels the jobs, stops the cluster by PID, deletes its directory
  if [ -n "$current_dir" ]; then
    local t0=$SECONDS
    "$cluster" stop "$current_dir" >/dev/null 2>&1 || true
    if [ -n "${KEEP_LOGS:-}" ]; then
      local keep
      keep="$KEEP_LOGS/$(basename "$current_dir")"
      mkdir -p "$keep" && cp -r "$current_dir/log/." "$keep/" && echo "logs kept in $keep"
    fi
    rm -rf "$current_dir"
    echo "cluster stopped in $((SECONDS - t0)) s"
    current_dir=""
  fi
}
trap 'stop_gpupool; stop_current; if [ -n "$shapes_dir" ]; then rm -rf "$shapes_dir"; fi' EXIT
if [ -n "$shapes_dir" ]; then cat "$shapes_dir/summary"; fi

for size in "${sizes[@]}"; do run_size "$size"; done
