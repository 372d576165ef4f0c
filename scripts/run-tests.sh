#!/usr/bin/env bash
# Runs the whole suite with ctest and prints its summary. PostgreSQL-backed tests get a real
# server started here (initdb in a temporary directory, loopback only) and stopped on exit.
#   scripts/run-tests.sh [BUILD_DIR [CTEST_ARGS...]]   e.g. `build-sanitize -L '^unit_model$'`
set -euo pipefail
build_dir=${1:-build}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)

if [ -x "$root/scripts/pg-test-server.sh" ]; then
  # shellcheck source=/dev/null
  source "$root/scripts/pg-test-server.sh"
  trap pg_test_server_stop EXIT
  # The PostgreSQL store is half of what the suite checks: a server that cannot start fails the
  # run rather than skipping those tests, unless asked (GPUPOOL_SKIP_POSTGRES=1).
  if ! pg_test_server_start; then
    if [ "${GPUPOOL_SKIP_POSTGRES:-0}" != 1 ]; then
      echo "run-tests: PostgreSQL could not be started (see above); GPUPOOL_SKIP_POSTGRES=1 skips its tests" >&2
      exit 1
    fi
    echo "run-tests: PostgreSQL could not be started; GPUPOOL_SKIP_POSTGRES=1: its tests are skipped"
  fi
fi

cd "$build_dir"
# Twice as many tests as cores: a good part of the suite waits (servers starting, the Slurm
# cluster, PostgreSQL, the browser) rather than computes. On 2 cores the whole suite took 103 s
# at -j4 against 158 s at -j2 (docs/BENCHMARKS.md, "Build time, fifth round").
ctest --output-on-failure -j "${GPUPOOL_TEST_JOBS:-$(($(nproc) * 2))}" --timeout 600 "$@"
