#!/usr/bin/env bash
# `make run`: a fresh demo store (.run/demo.db) loaded with the seeds' examples through the real
# binary's commands, the demo cluster imported, then `pool list`, `resource list` and a dry-run
# submission. Usage: scripts/run-demo.sh BUILD_DIR
# GPUPOOL_DEMO_RUN_DIR: where the store and the seed files go (default .run/ in the repository);
# GPUPOOL_DEMO_SERVER=0: load the store only, start no server (the dashboard's browser tests).
set -euo pipefail
build_dir=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build_dir" in
  /*) bin="$build_dir/bin/gpupool" ;;
  *) bin="$root/$build_dir/bin/gpupool" ;;
esac
if [ ! -x "$bin" ]; then
  echo "run-demo: $bin not found; build it first (make run builds it)" >&2
  exit 1
fi

run_dir="${GPUPOOL_DEMO_RUN_DIR:-$root/.run}"
mkdir -p "$run_dir"
rm -f "$run_dir"/demo.db "$run_dir"/demo.db-wal "$run_dir"/demo.db-shm
export GPUPOOL_DB="sqlite:$run_dir/demo.db"
work="$run_dir/seed-files"
rm -rf "$work"
mkdir -p "$work"
cd "$work"

bold=$'\e[1m'
dim=$'\e[2m'
plain=$'\e[0m'
if [ ! -t 1 ]; then bold=""; dim=""; plain=""; fi

# Prints the command as a user types it, then runs it.
quoted() {
  local out="" a
  for a in "$@"; do
    case "$a" in *[[:space:]]*) out+=" '$a'" ;; *) out+=" $a" ;; esac
  done
  echo "${out# }"
}
step() {
  echo
  echo "${bold}\$ gpupool $(quoted "$@")${plain}"
  "$bin" "$@"
}
# The same for a command that is expected to fail (its error is the point).
step_fails() {
  echo
  echo "${bold}\$ gpupool $(quoted "$@")${plain}    ${dim}# expected to fail${plain}"
  if "$bin" "$@"; then
    echo "run-demo: expected this command to fail" >&2
    exit 1
  fi
}
note() { echo; echo "${dim}# $*${plain}"; }

fixtures="$root/tests/cli/fixtures"
cp "$fixtures/seed000/l40s_pod_template.json" "$fixtures/seed000/a100_pod_template.json" \
  "$fixtures/seed000/role_config.json" .
cp "$fixtures/seed002/platform_config.json" platform_config.json

echo "${bold}gpupool demo${plain}: store $GPUPOOL_DB, seed files in $work"
note "Seed 000/002, step 1: a pod template per kind of host machine."
step config update POD_TEMPLATE l40s --file l40s_pod_template.json
note "The seeds' a100_pod_template.json is malformed as published ('}' closes the tolerations list):"
step_fails config update POD_TEMPLATE a100 --file a100_pod_template.json
note "A corrected copy (line 14: '}' -> ']'):"
sed '14s/^      }$/      ]/' a100_pod_template.json > a100_pod_template.fixed.json
mv a100_pod_template.fixed.json a100_pod_template.json
step config update POD_TEMPLATE a100 --file a100_pod_template.json

note "Step 2: the heterogeneous pool with one platform per machine type, and its roles."
step config update POOL heterogeneous_pool --file platform_config.json
step config set ROLE osmo-heterogeneous_pool pool
step config set ROLE osmo-shared -f role_config.json

note "Seed 001: the robotics pools, with the backends, templates and validation sets they name (examples/osmo/)."
step config update BACKEND --file "$root/examples/osmo/backends.json" --description "the backends seed 001's pools name"
step config update POD_TEMPLATE --file "$root/examples/osmo/pod_templates.json" --description "examples/osmo templates"
step config update RESOURCE_VALIDATION --file "$root/examples/osmo/resource_validations.json"
step config update ROLE --file "$root/examples/osmo/roles.json"
for pool in robotics_training robotics_simulation robotics_inference team_development; do
  step config update POOL --file "$fixtures/seed001/$pool.json"
done

note "The demo cluster: nodes written per GPU type plus real node objects (examples/cluster/)."
for f in "$root"/examples/cluster/gpu-nodes.yaml "$root"/examples/cluster/real/*; do
  step node import "$f"
done

step pool list
step resource list
step resource list --pool heterogeneous_pool

note "A dry run prints the Kubernetes Pods, one per task, and stores nothing:"
step workflow submit "$root/examples/workflows/hetero.yaml" --pool heterogeneous_pool --dry-run --set epochs=5
note "A user without a role for the pool is refused, naming the user and the roles checked:"
step_fails workflow submit "$root/examples/workflows/hetero.yaml" --pool heterogeneous_pool --user bob --roles osmo-robotics
note "Submitted for real, the workflow is stored PENDING (scheduling is the server's job):"
step workflow submit "$root/examples/workflows/robotics-training.yaml" --pool robotics-training
step workflow list
step config history --limit 5
note "Seed 004's machine pools: the server launches their min_replicas nodes, adds nodes for work that fits no node, removes idle ones:"
step apply -f "$root/examples/machine-pools/pools.yaml"

# ---- Server demo ------------------------------------------------------------------------------
# The server engineer's part of `make run` (start `gpupool serve` on this store and the demo
# cluster, print the URL, a dev token and commands to try) lives in scripts/run-server-demo.sh.
if [ "${GPUPOOL_DEMO_SERVER:-1}" != "0" ] && [ -x "$root/scripts/run-server-demo.sh" ]; then
  "$root/scripts/run-server-demo.sh" "$bin" "$GPUPOOL_DB" "$root/examples/cluster"
fi
