#!/usr/bin/env bash
# Runs the whole suite with ctest and prints its summary. PostgreSQL-backed tests get a real
# server started here (initdb in a temporary directory, loopback only) and stopped on exit.
set -euo pipefail
build_dir=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)

if [ -x "$root/scripts/pg-test-server.sh" ]; then
  # shellcheck source=/dev/null
  source "$root/scripts/pg-test-server.sh"
  pg_test_server_start || echo "run-tests: PostgreSQL could not be started; its tests will be skipped"
  trap pg_test_server_stop EXIT
fi

cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600
