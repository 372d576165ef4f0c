#!/usr/bin/env bash
# The ctest fixture of the Slurm tests: a 3-node loopback cluster in a fresh directory under
# /tmp (slurmrestd runs as `nobody`, who must be able to reach it: a build tree under a private
# home directory would not do). STATE holds the cluster's directory, or "skipped: <reason>".
#   cluster_fixture.sh start STATE   # stops a cluster an earlier run left, starts anew
#   cluster_fixture.sh stop STATE    # stops it and deletes its directory
# Where the cluster cannot run (Slurm's Debian packages missing, or not root), start succeeds
# without one and says why in STATE: the tests then skip with that reason.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../scripts/slurm-test-cluster.sh"
command=$1
state=$2

stop_recorded() {
  if [ -f "$state" ]; then
    local dir
    dir=$(cat "$state")
    if [ -f "$dir/env" ]; then "$script" stop "$dir" || true; fi
    rm -f "$state"
  fi
}

case "$command" in
  start)
    stop_recorded
    if ! missing=$("$script" packages); then
      echo "skipped: Slurm's Debian packages are missing ($missing); scripts/install-deps.sh" \
        "installs them" | tee "$state"
      exit 0
    fi
    if [ "$(id -u)" != 0 ]; then
      echo "skipped: the Slurm daemons must run as root" | tee "$state"
      exit 0
    fi
    dir=$(mktemp -d /tmp/gpupool-slurm-test.XXXXXX)
    # Marks the directory as the script's own: `stop` deletes it.
    : >"$dir/.temporary"
    echo "$dir" >"$state" || { rm -rf "$dir"; exit 1; }
    "$script" start 3 "$dir"
    ;;
  stop)
    stop_recorded
    ;;
  *)
    echo "usage: $0 start|stop STATE_FILE" >&2
    exit 2
    ;;
esac
