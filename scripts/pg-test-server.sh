#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests.
#
# Source this file and call
#   pg_test_server_start   # initdb in a fresh temporary directory, start on 127.0.0.1:<free port>
#                          # (unix socket inside the temporary directory), create a database and
#                          # export GPUPOOL_TEST_PG_URL=postgresql://gpupool@127.0.0.1:<port>/gpupool_test
#   pg_test_server_stop    # stop the server, delete the directory, unset GPUPOOL_TEST_PG_URL
# or run it directly to wrap one command:  scripts/pg-test-server.sh ctest --test-dir build
#
# Binaries come from $PG_BIN if set, else the newest Debian /usr/lib/postgresql/<version>/bin.
# initdb refuses to run as root, so as root the server runs as the `postgres` user (runuser or
# su), which then owns the temporary directory. Authentication is `trust`, and the server listens
# on the loopback address only. Safe under `set -euo pipefail`; stop is idempotent.

_pg_test_log() { echo "pg-test-server: $*" >&2; }

_pg_test_find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/pg_ctl" ] && { echo "$PG_BIN"; return 0; }
    _pg_test_log "PG_BIN=$PG_BIN has no pg_ctl"
    return 1
  fi
  local dir best="" best_version=-1 version
  for dir in /usr/lib/postgresql/*/bin; do
    if [ ! -x "$dir/initdb" ] || [ ! -x "$dir/pg_ctl" ]; then continue; fi
    version=$(basename "$(dirname "$dir")")
    version=${version%%.*}
    case "$version" in '' | *[!0-9]*) continue ;; esac
    if [ "$version" -gt "$best_version" ]; then
      best_version=$version
      best=$dir
    fi
  done
  if [ -z "$best" ]; then
    _pg_test_log "no PostgreSQL binaries under /usr/lib/postgresql/*/bin (install postgresql)"
    return 1
  fi
  echo "$best"
}

# Runs a command as the server's owner: the postgres user when we are root, else ourselves.
_pg_test_as_owner() {
  if [ -z "${_PG_TEST_OWNER:-}" ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$_PG_TEST_OWNER" -- "$@"
  else
    # su takes one shell string: quote every argument.
    su -s /bin/sh "$_PG_TEST_OWNER" -c "$(printf '%q ' "$@")"
  fi
}

# True when nothing accepts connections on 127.0.0.1:$1.
_pg_test_port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pg_test_server_start() {
  if [ -n "${_PG_TEST_DIR:-}" ]; then
    _pg_test_log "already running ($GPUPOOL_TEST_PG_URL)"
    return 0
  fi
  local bin
  bin=$(_pg_test_find_bin) || return 1

  _PG_TEST_OWNER=""
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      _pg_test_log "running as root but there is no postgres user to run the server as"
      return 1
    fi
    _PG_TEST_OWNER=postgres
  fi

  _PG_TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-pg.XXXXXX") || return 1
  _PG_TEST_BIN=$bin
  mkdir -p "$_PG_TEST_DIR/socket"
  if [ -n "$_PG_TEST_OWNER" ]; then
    chown -R "$_PG_TEST_OWNER" "$_PG_TEST_DIR"
    chmod 755 "$_PG_TEST_DIR"
  fi

  if ! _pg_test_as_owner "$bin/initdb" -D "$_PG_TEST_DIR/data" -U gpupool -A trust -E UTF8 \
    --locale=C --no-sync >"$_PG_TEST_DIR/initdb.log" 2>&1; then
    _pg_test_log "initdb failed:"
    cat "$_PG_TEST_DIR/initdb.log" >&2
    pg_test_server_stop
    return 1
  fi

  # Tests need no durability; GPUPOOL_TEST_PG_DURABLE=1 keeps PostgreSQL's defaults (every commit
  # flushed to its WAL) for benchmarks of durable writes.
  local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  if [ "${GPUPOOL_TEST_PG_DURABLE:-0}" = 1 ]; then durability=""; fi
  # A port can be taken between the check and the bind; try a few.
  local attempt port started=""
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    _pg_test_port_free "$port" || continue
    if _pg_test_as_owner "$bin/pg_ctl" -D "$_PG_TEST_DIR/data" -l "$_PG_TEST_DIR/server.log" \
      -w -t 60 -o "-c listen_addresses=127.0.0.1 -p $port -k $_PG_TEST_DIR/socket \
$durability -c max_connections=200" \
      start >/dev/null 2>&1; then
      started=1
      break
    fi
    _pg_test_log "start on port $port failed (attempt $attempt)"
  done
  if [ -z "$started" ]; then
    _pg_test_log "could not start the server; its log:"
    cat "$_PG_TEST_DIR/server.log" >&2 2>/dev/null || true
    pg_test_server_stop
    return 1
  fi
  _PG_TEST_PORT=$port

  if ! _pg_test_as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U gpupool gpupool_test; then
    _pg_test_log "createdb failed"
    pg_test_server_stop
    return 1
  fi
  export GPUPOOL_TEST_PG_URL="postgresql://gpupool@127.0.0.1:$port/gpupool_test"
  _pg_test_log "PostgreSQL $(basename "$(dirname "$bin")") at $GPUPOOL_TEST_PG_URL (data in $_PG_TEST_DIR)"
}

pg_test_server_stop() {
  if [ -n "${_PG_TEST_DIR:-}" ] && [ -d "$_PG_TEST_DIR" ]; then
    if [ -f "$_PG_TEST_DIR/data/postmaster.pid" ]; then
      local pid
      pid=$(head -n 1 "$_PG_TEST_DIR/data/postmaster.pid")
      _pg_test_as_owner "${_PG_TEST_BIN}/pg_ctl" -D "$_PG_TEST_DIR/data" -m fast -w -t 30 stop \
        >/dev/null 2>&1 ||
        _pg_test_as_owner "${_PG_TEST_BIN}/pg_ctl" -D "$_PG_TEST_DIR/data" -m immediate -w stop \
          >/dev/null 2>&1 || true
      # pg_ctl refuses to run as root: a shell that lost _PG_TEST_OWNER stops it by its pid, so
      # no server is left running on a deleted data directory.
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
    fi
    rm -rf "$_PG_TEST_DIR"
  fi
  unset _PG_TEST_DIR _PG_TEST_BIN _PG_TEST_PORT _PG_TEST_OWNER GPUPOOL_TEST_PG_URL
  return 0
}

# Executed rather than sourced: start, run the arguments (or print the URL), stop.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARG...]   (or source it and call pg_test_server_start/stop)" >&2
    exit 2
  fi
  pg_test_server_start
  trap pg_test_server_stop EXIT
  "$@"
fi
