#!/usr/bin/env bash
# Slurm alone on a loopback cluster: how fast Slurm's own scheduler (backfill, tuned) starts a
# stream of one-GPU jobs. The Slurm half of the gpupool-vs-Slurm benchmark (docs/SLURM.md).
#
#   scripts/bench-slurm.sh [NODES...]        # default: 200 1000
#   JOBS=2000 TIMEOUT_S=900 scripts/bench-slurm.sh 200
#
# For each cluster size: start a cluster of NODES nodes x 8 A100s (scripts/slurm-test-cluster.sh,
# no slurmrestd), print the scheduler settings, then
#   1. the cost of one scheduling decision without a launch: 50 x `sbatch --test-only` on the
#      idle cluster, slurmctld's mean REQUEST_JOB_WILL_RUN time from sdiag;
#   2. the stream: JOBS one-GPU jobs as one array (`sbatch --array=1-JOBS --gres=gpu:1
#      --wrap 'exec sleep 1000'`), counted as started from slurmctld's log (polling squeue would
#      load slurmctld), until all that fit have started (min(JOBS, 8 x NODES)) or TIMEOUT_S;
#   3. figures: time until all started, started per second, sdiag's main and backfill cycles,
#      GPUs allocated at the end (sinfo GresUsed), slurmctld's CPU seconds over the stream.
# Then cancel everything and stop the cluster. Needs root and about 3 MB per slurmd + 2 MB per
# running job (1,000 nodes and 2,000 jobs: ~7 GB). Numbers include the real launch cost
# (slurmstepd + a process per job); run nothing else meanwhile.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster="$root/scripts/slurm-test-cluster.sh"
jobs=${JOBS:-2000}
timeout_s=${TIMEOUT_S:-900}
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then sizes=(200 1000); fi

cpu_seconds() {  # utime + stime of a process, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"
}

started_count() {  # jobs slurmctld started, from its log
  grep -cE 'sched: Allocate JobId|backfill: _start_job: Started|sched/backfill: _start_job: Started' \
    "$1" || true
}

gpus_allocated() {
  sinfo -h -N -O 'NodeList:20,GresUsed:60' | awk '
    { n = split($2, parts, ","); for (i = 1; i <= n; i++) if (parts[i] ~ /^gpu/) {
        split(parts[i], f, ":"); c = f[length(f) > 2 ? 3 : 2]; sub(/\(.*/, "", c); total += c } }
    END { print total + 0 }'
}

run_size() {
  local nodes=$1 dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-bench-slurm.XXXXXX")
  echo "== Slurm alone: $nodes nodes x 8 GPUs, $jobs one-GPU jobs =="
  local t0=$SECONDS
  SLURM_TEST_REST=0 nice -n 0 "$cluster" start "$nodes" "$dir" >/dev/null
  echo "cluster up in $((SECONDS - t0)) s"
  current_dir=$dir
  # shellcheck disable=SC1091
  source "$dir/env"
  scontrol show config | grep -E '^(SchedulerType|SchedulerParameters|SelectType|SelectTypeParameters|DefMemPerCPU) ' |
    sed 's/^/setting: /'
  local ctld log
  ctld=$(cat "$dir/run/slurmctld.bgpid")
  log="$dir/log/slurmctld.log"

  # 1. One decision without a launch.
  sdiag --reset >/dev/null
  for _ in $(seq 1 50); do
    sbatch --test-only -p gpu --gres=gpu:1 --wrap 'exec sleep 1' >/dev/null 2>&1 || true
  done
  local will_run
  will_run=$(sdiag | awk '/REQUEST_JOB_WILL_RUN/ { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }')
  echo "test-only decision (REQUEST_JOB_WILL_RUN mean): ${will_run:-?} us"

  # 2. The stream.
  local expected=$((nodes * 8))
  if [ "$jobs" -lt "$expected" ]; then expected=$jobs; fi
  local before cpu0 start now count=0
  before=$(started_count "$log")
  sdiag --reset >/dev/null
  cpu0=$(cpu_seconds "$ctld")
  start=$(date +%s.%N)
  sbatch --array="1-$jobs" -p gpu --gres=gpu:1 -o /dev/null --wrap 'exec sleep 1000' >/dev/null
  local deadline=$((SECONDS + timeout_s))
  while [ "$SECONDS" -lt "$deadline" ]; do
    count=$(($(started_count "$log") - before))
    if [ "$count" -ge "$expected" ]; then break; fi
    sleep 0.5
  done
  now=$(date +%s.%N)
  local cpu1
  cpu1=$(cpu_seconds "$ctld")
  local wall
  wall=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }')
  echo "started: $count of $expected in $wall s ($(awk -v c="$count" -v w="$wall" 'BEGIN { printf "%.1f", c / w }') jobs/s)"
  echo "GPUs allocated at the end: $(gpus_allocated) of $((nodes * 8))"
  echo "slurmctld CPU over the stream: $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }') s"
  sdiag | awk '/^Main schedule statistics/,/^Backfilling stats/ { if ($0 ~ /Total cycles|Mean cycle|Mean depth cycle|Last cycle/) print "sdiag main: " $0 }
               /^Backfilling stats/,/^Latency/ { if ($0 ~ /Total backfilled jobs \(since last slurm start\)|Total cycles|Mean cycle|Last depth cycle:/) print "sdiag backfill: " $0 }' |
    sed 's/  */ /g'
  stop_current
  echo
}

current_dir=""
stop_current() {  # cancels the jobs, stops the cluster by PID, deletes its directory
  if [ -n "$current_dir" ]; then
    local t0=$SECONDS
    "$cluster" stop "$current_dir" >/dev/null 2>&1 || true
    rm -rf "$current_dir"
    echo "cluster stopped in $((SECONDS - t0)) s"
    current_dir=""
  fi
}
trap stop_current EXIT

for size in "${sizes[@]}"; do run_size "$size"; done
