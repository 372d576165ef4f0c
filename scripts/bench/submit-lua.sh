#!/usr/bin/env bash
# Prints a wrk script that POSTs the workflow file FILE (as YAML) with the bearer TOKEN: the
# submissions of scripts/bench-http.sh and scripts/ir-per-submission.sh.
#   scripts/bench/submit-lua.sh FILE TOKEN
set -euo pipefail
body=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$1")
cat <<LUA
wrk.method = "POST"
wrk.body = $body
wrk.headers["Authorization"] = "$2"
wrk.headers["Content-Type"] = "application/yaml"
LUA
