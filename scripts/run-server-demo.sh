#!/usr/bin/env bash
# The server part of `make run`, called at the end of scripts/run-demo.sh:
#   run-server-demo.sh GPUPOOL_BIN DB_URL CLUSTER_DIR
# Starts `gpupool serve` on the demo store and the demo cluster (simulated backend, dev auth),
# prints the URL, a dev token and commands to try, and keeps serving until Ctrl-C.
# GPUPOOL_DEMO_DETACH=1 leaves the server running in the background instead (pid in .run/).
set -euo pipefail
bin=${1:?usage: run-server-demo.sh GPUPOOL_BIN DB_URL CLUSTER_DIR}
db=${2:?}
cluster=${3:?}
root=$(cd "$(dirname "$0")/.." && pwd)
run_dir="$root/.run"
mkdir -p "$run_dir"
port=${GPUPOOL_DEMO_PORT:-8080}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
url="http://127.0.0.1:$port"
token="dev:$(id -un):osmo-admin"

"$bin" serve --listen "127.0.0.1:$port" --db "$db" --backend "sim:$cluster" --auth dev \
  --history-interval 10s >"$run_dir/server.log" 2>&1 &
pid=$!
echo "$pid" >"$run_dir/server.pid"
for _ in $(seq 1 100); do
  if curl -fsS "$url/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "gpupool serve failed to start:"; cat "$run_dir/server.log"; exit 1
  fi
  sleep 0.1
done

# The server prints its --auth dev warning on stderr, which goes to the log: repeat it here, where
# it is seen (the log's own line, or this one if the server's wording ever changes).
warning=$(grep -m1 '^WARNING: --auth dev' "$run_dir/server.log" || true)
if [ -z "$warning" ]; then
  warning="WARNING: --auth dev accepts any bearer token dev:<user>:<role,role> WITHOUT verification."
fi
bar=$(printf '%*s' 78 '' | tr ' ' '!')
printf '\n%s\n%s\n%s\n' "$bar" "$warning" "$bar" >&2

cat <<MSG

==> gpupool server: $url   (log: .run/server.log)

    Dashboard, logged in with the dev token (read once from the URL's fragment, which browsers
    never send to the server, then kept in the tab's sessionStorage):
    $url/#token=$token

    It schedules the stored workflows on the simulated demo cluster; /metrics, /healthz, /readyz.
    Auth is --auth dev (local use only): any bearer token dev:<user>:<role,role> is accepted.

    export GPUPOOL_TOKEN=$token
    $bin --server $url pool list
    $bin --server $url workflow submit $root/examples/workflows/quick.yaml --pool default
    $bin --server $url workflow list
    curl -s -H "Authorization: Bearer \$GPUPOOL_TOKEN" $url/api/resources | head -c 400

    Machine pools (seed 004) at work: nodes named after their pool appear within a step
    (tainted not-ready for the 60 s a machine takes to boot), and every launch is audited:
    $bin --server $url resource list
    curl -s -H "Authorization: Bearer \$GPUPOOL_TOKEN" "$url/api/audit?limit=5"

MSG
if [ "${GPUPOOL_DEMO_DETACH:-0}" = "1" ]; then
  echo "Server left running (pid $pid); stop it with: kill $pid"
  exit 0
fi
echo "Serving; press Ctrl-C to stop."
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$run_dir/server.pid"; exit 0' INT TERM
wait "$pid"
