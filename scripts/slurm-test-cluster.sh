#!/usr/bin/env bash
# A throwaway Slurm cluster on the loopback interface, for gpupool's Slurm tests and benchmark.
#
#   scripts/slurm-test-cluster.sh start N [DIR]   # N nodes; DIR defaults to a fresh temporary one
#   scripts/slurm-test-cluster.sh stop [DIR]      # cancel the jobs, stop every daemon by PID; a
#                                                 # DIR that start made is deleted unless
#                                                 # SLURM_TEST_KEEP=1
#   scripts/slurm-test-cluster.sh status [DIR]    # daemons, nodes, jobs, REST URL
#   scripts/slurm-test-cluster.sh env [DIR]       # the cluster's variables (see below), to source
#   scripts/slurm-test-cluster.sh ctld-stop [DIR] | ctld-start [DIR]
#                                                 # stop slurmctld (jobs keep running), start it
#                                                 # again from its saved state
#
# Without DIR, stop/status/env use $GPUPOOL_SLURM_DIR, else the cluster this script started last.
#
# What runs, all from Debian's packages (installed by scripts/install-deps.sh) and all inside DIR:
# - munged on a private socket with a fresh key;
# - slurmctld, and one slurmd per node (`slurmd -N NAME`, Debian builds Slurm with
#   --enable-multiple-slurmd), each on its own loopback port;
# - fake GPU device nodes per node (character devices like /dev/null, listed in gres.conf), so
#   Slurm binds GPUs to jobs and sets CUDA_VISIBLE_DEVICES;
# - slurmrestd as the unprivileged user `nobody`, on 127.0.0.1:PORT with JWT (AuthAltTypes=
#   auth/jwt) and on the UNIX socket DIR/rest/slurmrestd.sock with local auth (the client must
#   then be `nobody` too). A token: `SLURM_CONF=DIR/etc/slurm.conf scontrol token username=nobody`.
#
# Node shape, from the environment (defaults in brackets):
#   SLURM_TEST_GPUS [8]  SLURM_TEST_GPU_TYPE [a100]  SLURM_TEST_CPUS [64]
#   SLURM_TEST_MEMORY_MB [512000]  SLURM_TEST_TMP_DISK_MB [1048576]
#   SLURM_TEST_FEATURES [none; e.g. "ib,nvlink"]
#   SLURM_TEST_PARTITION [gpu]  SLURM_TEST_SCHED_PARAMS [tuned backfill, see below]
#   SLURM_TEST_REST [1; 0 starts no slurmrestd]
#
# DIR/env holds SLURM_CONF, GPUPOOL_SLURM_DIR, GPUPOOL_SLURM_URL (http://127.0.0.1:PORT),
# GPUPOOL_SLURM_SOCKET, GPUPOOL_SLURM_USER (nobody), GPUPOOL_SLURM_NODES, GPUPOOL_SLURM_JOBS_DIR (a
# directory every job may write to) and GPUPOOL_SLURM_PARTITION.
#
# Readiness is polled (scontrol ping, sinfo, the REST /ping), each wait bounded. The daemons need
# root (slurmd starts jobs as their users); the script says so and exits 2 otherwise.
set -euo pipefail

readonly SCRIPT_NAME=slurm-test-cluster
readonly LAST_FILE="${TMPDIR:-/tmp}/gpupool-slurm-test-cluster.last"
readonly REST_USER=nobody
readonly REST_VERSIONS=openapi/v0.0.38,openapi/v0.0.37,openapi/v0.0.36

log() { echo "$SCRIPT_NAME: $*" >&2; }
die() {
  log "$*"
  exit 1
}

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The packages the cluster needs, and whether each is installed.
missing_packages() {
  local p missing=()
  for p in slurmctld slurmd slurm-client munge slurmrestd slurm-wlm-jwt-plugin; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  echo "${missing[*]}"
}

# True when nothing accepts connections on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A base port such that base..base+count-1 are all free; random, so that clusters of several
# users on one machine do not collide. Below the kernel's ephemeral range: a port there may be
# the local end of some outgoing connection, which no listener shows but which makes bind fail.
free_port_range() {
  local count=$1 base offset ok ephemeral
  ephemeral=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  local low=10000 span=$((ephemeral - 10000 - count))
  [ "$span" -gt 0 ] || die "no room for $count ports below the ephemeral range ($ephemeral)"
  for _ in $(seq 1 50); do
    base=$((low + RANDOM % span))
    ok=1
    for ((offset = 0; offset < count; offset++)); do
      if ! port_free $((base + offset)); then
        ok=0
        break
      fi
    done
    if [ "$ok" = 1 ]; then
      echo "$base"
      return 0
    fi
  done
  die "no $count consecutive free ports found on 127.0.0.1"
}

# Polls "$@" every 0.2 s until it succeeds, for at most $1 seconds; the rest of the arguments
# are the command.
wait_until() {
  local timeout_s=$1
  shift
  local deadline=$((SECONDS + timeout_s))
  while ! "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then return 1; fi
    sleep 0.2
  done
}

# wait_until, but gives up as soon as the daemon(s) whose PIDs are in $1 have all exited.
wait_for_daemon() {
  local pidfile=$1 timeout_s=$2
  shift 2
  local deadline=$((SECONDS + timeout_s))
  while ! "$@" >/dev/null 2>&1; do
    # shellcheck disable=SC2046
    if ! any_alive $(pids_of "$pidfile"); then return 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then return 1; fi
    sleep 0.2
  done
}

node_name() { printf 'gpu%04d' "$1"; }

resolve_dir() {
  local dir=${1:-${GPUPOOL_SLURM_DIR:-}}
  if [ -z "$dir" ] && [ -f "$LAST_FILE" ]; then dir=$(cat "$LAST_FILE"); fi
  [ -n "$dir" ] || die "no cluster directory given and none started"
  [ -f "$dir/env" ] || die "$dir is not a $SCRIPT_NAME directory (no env file)"
  echo "$dir"
}

write_configs() {
  local dir=$1 count=$2 ctld_port=$3 slurmd_base=$4
  local gpus=${SLURM_TEST_GPUS:-8} gpu_type=${SLURM_TEST_GPU_TYPE:-a100}
  local cpus=${SLURM_TEST_CPUS:-64} memory=${SLURM_TEST_MEMORY_MB:-512000}
  local tmp_disk=${SLURM_TEST_TMP_DISK_MB:-1048576}
  local partition=${SLURM_TEST_PARTITION:-gpu} features=${SLURM_TEST_FEATURES:-}
  # Backfill tuned for throughput: a deep queue, short intervals, scheduling soon after submits.
  # max_sched_time may not exceed MessageTimeout/2 (10/2 here): slurmctld rejects a larger value
  # ("error: Invalid max_sched_time" in its log) and caps each main pass at 2 s instead.
  local sched=${SLURM_TEST_SCHED_PARAMS:-default_queue_depth=20000,partition_job_depth=0,\
sched_interval=2,max_sched_time=5,batch_sched_delay=1,bf_interval=5,bf_max_job_test=20000,\
bf_continue,bf_yield_interval=1000000,max_rpc_cnt=150}
  local last
  last=$(node_name "$count")
  local nodes="gpu[0001-${last#gpu}]"
  local feature_line=""
  if [ -n "$features" ]; then feature_line=" Features=$features"; fi
  local gres_line=""
  if [ "$gpus" -gt 0 ]; then
    gres_line=" Gres=gpu:$gpu_type:$gpus"
  fi

  cat >"$dir/etc/slurm.conf" <<EOF
# Generated by scripts/$SCRIPT_NAME.sh: $count nodes on 127.0.0.1.
ClusterName=gpupooltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
# A node that stopped responding is usable again when its slurmd registers; one set DOWN by
# an admin stays down until resumed (=2 would return it at its next registration, at once here).
ReturnToService=1
# The machine has far fewer CPUs and less memory than the nodes claim.
SlurmdParameters=config_overrides
SlurmctldTimeout=300
SlurmdTimeout=0
InactiveLimit=0
MinJobAge=300
KillWait=5
UnkillableStepTimeout=600
Waittime=0
MaxJobCount=200000
MaxArraySize=100001
SchedulerType=sched/backfill
SchedulerParameters=$sched
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default, a job without --mem takes the whole node's memory.
DefMemPerCPU=1000
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket.2
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$dir/etc/jwt_hs256.key
NodeName=$nodes NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$slurmd_base-$((slurmd_base + count - 1))] CPUs=$cpus RealMemory=$memory TmpDisk=$tmp_disk$gres_line$feature_line State=UNKNOWN
PartitionName=$partition Nodes=$nodes Default=YES MaxTime=INFINITE State=UP
EOF

  {
    echo "AutoDetect=off"
    if [ "$gpus" -gt 0 ]; then
      local i name
      for ((i = 1; i <= count; i++)); do
        name=$(node_name "$i")
        echo "NodeName=$name Name=gpu Type=$gpu_type File=$dir/dev/$name/nvidia[0-$((gpus - 1))]"
      done
    fi
  } >"$dir/etc/gres.conf"
}

# One directory of fake GPU devices per node: character devices like /dev/null (1,3), or, where
# mknod is not allowed, regular files (slurmd then warns but binds them all the same).
make_fake_devices() {
  local dir=$1 count=$2 gpus=${SLURM_TEST_GPUS:-8}
  local i g name path
  for ((i = 1; i <= count; i++)); do
    name=$(node_name "$i")
    mkdir -p "$dir/dev/$name"
    for ((g = 0; g < gpus; g++)); do
      path="$dir/dev/$name/nvidia$g"
      mknod "$path" c 1 3 2>/dev/null || : >"$path"
    done
  done
}

start_munged() {
  local dir=$1
  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
    die "mungekey could not create $dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  # munged's directory must be world-searchable: slurmrestd (nobody) talks to the socket.
  chmod 755 "$dir/munge"
  /usr/sbin/munged --force --socket="$dir/munge/munge.socket.2" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --num-threads=4 ||
    die "munged did not start (see $dir/log/munged.log)"
  wait_until 10 test -S "$dir/munge/munge.socket.2" ||
    die "munged's socket did not appear (see $dir/log/munged.log)"
  cp "$dir/munge/munged.pid" "$dir/run/munged.pid"
}

# Daemons run in their own session with GPUPOOL_SLURM_DAEMON_OF=DIR in their environment:
# slurmstepd (one per job step, forked by slurmd) inherits it, so `stop` finds them by PID too.
# (Not GPUPOOL_SLURM_DIR: a shell that sourced DIR/env has that one.)
spawn() {
  local pidfile=$1 logfile=$2
  shift 2
  setsid env GPUPOOL_SLURM_DAEMON_OF="$DIR" SLURM_CONF="$DIR/etc/slurm.conf" "$@" \
    >>"$logfile" 2>&1 </dev/null &
  echo $! >>"$pidfile"
}

start_cluster() {
  local count=$1
  DIR=${2:-}
  case "$count" in '' | *[!0-9]*) die "start: N must be a positive number, got '$count'" ;; esac
  [ "$count" -ge 1 ] || die "start: N must be at least 1"
  local missing
  missing=$(missing_packages)
  [ -z "$missing" ] || die "missing Debian packages: $missing (scripts/install-deps.sh installs them)"
  [ "$(id -u)" = 0 ] || {
    log "the Slurm daemons must run as root (slurmd starts jobs as their users)"
    exit 2
  }
  if [ -z "$DIR" ]; then
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-slurm.XXXXXX")
    : >"$DIR/.temporary"
  else
    mkdir -p "$DIR"
    [ ! -f "$DIR/env" ] || die "$DIR already holds a cluster (stop it first)"
    DIR=$(cd "$DIR" && pwd)
  fi
  # nobody (slurmrestd, and jobs submitted through it) reads the configs and writes job output.
  chmod 755 "$DIR"
  mkdir -p "$DIR"/{etc,state,spool,run,log,munge,dev,rest}
  mkdir -p "$DIR/jobs" && chmod 1777 "$DIR/jobs"
  chown "$REST_USER" "$DIR/rest"
  echo "$DIR" >"$LAST_FILE"
  # From here on, a failure stops whatever has started.
  trap 'on_start_exit $?' EXIT

  local ctld_port slurmd_base rest_port=""
  # One range for slurmctld and the slurmds: two ranges picked apart could overlap, as neither
  # port is bound yet when the second is picked ("slurmctld is talking with itself").
  ctld_port=$(free_port_range $((count + 1)))
  slurmd_base=$((ctld_port + 1))
  write_configs "$DIR" "$count" "$ctld_port" "$slurmd_base"
  make_fake_devices "$DIR" "$count"
  dd if=/dev/urandom of="$DIR/etc/jwt_hs256.key" bs=32 count=1 status=none
  chmod 600 "$DIR/etc/jwt_hs256.key"
  export SLURM_CONF="$DIR/etc/slurm.conf"

  start_munged "$DIR"
  # Started through /usr/sbin/slurmctld and /usr/sbin/slurmd: the daemons recognise themselves
  # by argv[0], and under their real file names (slurmctld-wlm) they drop every GRES.
  spawn "$DIR/run/slurmctld.bgpid" "$DIR/log/slurmctld.stdout" /usr/sbin/slurmctld -D -i
  wait_for_daemon "$DIR/run/slurmctld.bgpid" 30 scontrol ping ||
    fail_start "slurmctld did not answer scontrol ping within 30 s" \
    "$DIR/log/slurmctld.log"
  local i name
  for ((i = 1; i <= count; i++)); do
    name=$(node_name "$i")
    mkdir -p "$DIR/spool/$name"
    spawn "$DIR/run/slurmd.bgpids" /dev/null /usr/sbin/slurmd -D -N "$name"
  done
  # Every node registered and idle; bounded by the node count (1,000 slurmds take ~12 s here).
  wait_for_daemon "$DIR/run/slurmctld.bgpid" $((30 + count / 20)) all_nodes_idle "$count" ||
    fail_start "not all $count nodes became idle: $(sinfo -h -N -o '%N=%T' | tr '\n' ' ')" \
      "$DIR/log/slurmctld.log"

  if [ "${SLURM_TEST_REST:-1}" = 1 ]; then
    rest_port=$(free_port_range 1)
    # Two slurmrestds, since one cannot do both: rest_auth/jwt on TCP (SLURM_JWT=daemon: every
    # request carries its own token, which slurmctld checks), and rest_auth/local on the UNIX
    # socket (requests run as nobody, authenticated by munge).
    spawn "$DIR/run/slurmrestd.bgpid" "$DIR/log/slurmrestd.log" \
      runuser -u "$REST_USER" -- env SLURM_JWT=daemon /usr/sbin/slurmrestd -s "$REST_VERSIONS" \
      -a rest_auth/jwt "127.0.0.1:$rest_port"
    spawn "$DIR/run/slurmrestd-unix.bgpid" "$DIR/log/slurmrestd-unix.log" \
      runuser -u "$REST_USER" -- /usr/sbin/slurmrestd -s "$REST_VERSIONS" \
      -a rest_auth/local "unix:$DIR/rest/slurmrestd.sock"
    local token
    token=$(scontrol token username="$REST_USER" lifespan=600 | sed 's/^SLURM_JWT=//')
    wait_for_daemon "$DIR/run/slurmrestd.bgpid" 30 curl -sf -H "X-SLURM-USER-NAME: $REST_USER" -H "X-SLURM-USER-TOKEN: $token" \
      "http://127.0.0.1:$rest_port/slurm/v0.0.38/ping" ||
      fail_start "slurmrestd did not answer /ping on 127.0.0.1:$rest_port within 30 s" \
        "$DIR/log/slurmrestd.log"
    wait_for_daemon "$DIR/run/slurmrestd-unix.bgpid" 30 curl -sf \
      --unix-socket "$DIR/rest/slurmrestd.sock" http://localhost/slurm/v0.0.38/ping ||
      fail_start "slurmrestd did not answer /ping on $DIR/rest/slurmrestd.sock within 30 s" \
        "$DIR/log/slurmrestd-unix.log"
  fi

  {
    echo "export SLURM_CONF=$DIR/etc/slurm.conf"
    echo "export GPUPOOL_SLURM_DIR=$DIR"
    if [ -n "$rest_port" ]; then
      echo "export GPUPOOL_SLURM_URL=http://127.0.0.1:$rest_port"
      echo "export GPUPOOL_SLURM_SOCKET=$DIR/rest/slurmrestd.sock"
      echo "export GPUPOOL_SLURM_USER=$REST_USER"
    fi
    echo "export GPUPOOL_SLURM_NODES=$count"
    echo "export GPUPOOL_SLURM_JOBS_DIR=$DIR/jobs"
    echo "export GPUPOOL_SLURM_PARTITION=${SLURM_TEST_PARTITION:-gpu}"
  } >"$DIR/env"
  trap - EXIT
  log "Slurm $(scontrol --version | awk '{print $2}'): $count nodes up in $DIR"
  print_access "$DIR"
}

all_nodes_idle() {
  local count=$1 idle
  idle=$(sinfo -h -N -t idle -o '%N' | sort -u | wc -l)
  [ "$idle" -eq "$count" ]
}

fail_start() {
  log "$1"
  if [ -f "$2" ]; then
    log "last lines of $2:"
    tail -n 20 "$2" >&2
  fi
  exit 1
}

# A start that fails part-way stops what it started and keeps the directory for its logs.
on_start_exit() {
  if [ "$1" != 0 ]; then
    log "start failed; stopping what had started (logs stay in $DIR/log)"
    SLURM_TEST_KEEP=1 stop_cluster "$DIR" >/dev/null 2>&1 || true
  fi
}

print_access() {
  local dir=$1
  # shellcheck disable=SC1091
  source "$dir/env"
  echo "SLURM_CONF=$SLURM_CONF"
  if [ -n "${GPUPOOL_SLURM_URL:-}" ]; then
    echo "REST: $GPUPOOL_SLURM_URL (JWT, user $GPUPOOL_SLURM_USER), unix:$GPUPOOL_SLURM_SOCKET"
    echo "token: SLURM_CONF=$SLURM_CONF scontrol token username=$GPUPOOL_SLURM_USER lifespan=3600"
  fi
  echo "variables: source $dir/env"
}

# PIDs of processes whose environment carries this cluster's marker (daemons and slurmstepds).
marked_pids() {
  local dir=$1 file pid
  # One grep over every environment (-z: NUL-separated entries); processes may vanish meanwhile.
  grep -lzxF "GPUPOOL_SLURM_DAEMON_OF=$dir" /proc/[0-9]*/environ 2>/dev/null |
    while read -r file; do
      pid=${file#/proc/}
      pid=${pid%/environ}
      if [ "$pid" != $$ ]; then echo "$pid"; fi
    done
}

pids_of() {
  local file
  for file in "$@"; do
    if [ -f "$file" ]; then cat "$file"; fi
  done
}

any_alive() {
  local pid
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then return 0; fi
  done
  return 1
}

# TERM, wait up to $1 seconds, then KILL.
terminate() {
  local timeout_s=$1
  shift
  [ $# -gt 0 ] || return 0
  kill "$@" 2>/dev/null || true
  if ! wait_until "$timeout_s" eval '! any_alive '"$*"; then
    kill -KILL "$@" 2>/dev/null || true
  fi
}

no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

stop_cluster() {
  local dir=$1
  export SLURM_CONF="$dir/etc/slurm.conf"
  # Jobs first, so their processes end under slurmstepd's control rather than as orphans.
  if scontrol ping >/dev/null 2>&1; then
    local jobs
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      wait_until 60 no_jobs || log "jobs still listed after 60 s; stopping anyway"
    fi
  fi
  # PID lists are split into arguments on purpose.
  # shellcheck disable=SC2046
  terminate 10 $(pids_of "$dir/run/slurmrestd.bgpid" "$dir/run/slurmrestd-unix.bgpid")
  # shellcheck disable=SC2046
  terminate 20 $(pids_of "$dir/run/slurmd.bgpids")
  # shellcheck disable=SC2046
  terminate 20 $(pids_of "$dir/run/slurmctld.bgpid")
  # Whatever is left with the marker: slurmstepds of jobs that did not end.
  # shellcheck disable=SC2046
  terminate 5 $(marked_pids "$dir")
  # shellcheck disable=SC2046
  terminate 5 $(pids_of "$dir/run/munged.pid")
  rm -f "$dir/run/"*.bgpid "$dir/run/slurmd.bgpids" "$dir/run/munged.pid"
  if [ -f "$LAST_FILE" ] && [ "$(cat "$LAST_FILE")" = "$dir" ]; then rm -f "$LAST_FILE"; fi
  if [ -f "$dir/.temporary" ] && [ "${SLURM_TEST_KEEP:-0}" != 1 ]; then
    rm -rf "$dir"
    log "stopped the cluster and deleted $dir"
  else
    log "stopped the cluster in $dir (logs in $dir/log)"
  fi
}

ctld_stop() {
  local dir=$1
  # shellcheck disable=SC2046
  terminate 30 $(pids_of "$dir/run/slurmctld.bgpid")
  rm -f "$dir/run/slurmctld.bgpid"
  log "slurmctld stopped"
}

ctld_start() {
  local dir=$1
  DIR=$dir
  export SLURM_CONF="$dir/etc/slurm.conf"
  # Without -i: the jobs and nodes come back from the state slurmctld saved when it stopped.
  spawn "$dir/run/slurmctld.bgpid" "$dir/log/slurmctld.stdout" /usr/sbin/slurmctld -D
  wait_for_daemon "$dir/run/slurmctld.bgpid" 30 scontrol ping ||
    fail_start "slurmctld did not answer scontrol ping within 30 s" "$dir/log/slurmctld.log"
  log "slurmctld started again"
}

status_cluster() {
  local dir=$1 pid alive=0 dead=0
  export SLURM_CONF="$dir/etc/slurm.conf"
  for pid in $(pids_of "$dir"/run/*.bgpid "$dir/run/slurmd.bgpids" "$dir/run/munged.pid"); do
    if kill -0 "$pid" 2>/dev/null; then alive=$((alive + 1)); else dead=$((dead + 1)); fi
  done
  echo "directory: $dir"
  echo "daemons: $alive running, $dead stopped"
  if scontrol ping >/dev/null 2>&1; then
    sinfo -N -o '%N %T %G %f'
    squeue -o '%i %j %T %N %b'
  else
    echo "slurmctld: not answering"
  fi
  print_access "$dir"
}

main() {
  local command=${1:-}
  [ -n "$command" ] || usage
  shift
  case "$command" in
    start)
      [ $# -ge 1 ] || usage
      start_cluster "$@"
      ;;
    stop) stop_cluster "$(resolve_dir "${1:-}")" ;;
    status) status_cluster "$(resolve_dir "${1:-}")" ;;
    env) cat "$(resolve_dir "${1:-}")/env" ;;
    ctld-stop) ctld_stop "$(resolve_dir "${1:-}")" ;;
    ctld-start) ctld_start "$(resolve_dir "${1:-}")" ;;
    packages)
      # For tests: prints the missing packages, exits 1 when some are.
      local missing
      missing=$(missing_packages)
      echo "$missing"
      [ -z "$missing" ]
      ;;
    *) usage ;;
  esac
}

main "$@"
