#!/usr/bin/env bash
# The ctest fixture of the Slurm tests: a 3-node loopback cluster in DIR.
#   cluster_fixture.sh start DIR   # stops a cluster left in DIR by an earlier run, starts anew
#   cluster_fixture.sh stop DIR
# Where the cluster cannot run (Slurm's Debian packages missing, or not root), start succeeds
# without one and writes the reason to DIR/skipped: the tests then skip, saying why.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../scripts/slurm-test-cluster.sh"
command=$1
dir=$2

case "$command" in
  start)
    if [ -f "$dir/env" ]; then "$script" stop "$dir" || true; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! missing=$("$script" packages); then
      echo "Slurm's Debian packages are missing ($missing); scripts/install-deps.sh installs them" \
        >"$dir/skipped"
      cat "$dir/skipped"
      exit 0
    fi
    if [ "$(id -u)" != 0 ]; then
      echo "the Slurm daemons must run as root" >"$dir/skipped"
      cat "$dir/skipped"
      exit 0
    fi
    "$script" start 3 "$dir"
    ;;
  stop)
    if [ -f "$dir/env" ]; then "$script" stop "$dir"; fi
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
