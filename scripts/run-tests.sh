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
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
