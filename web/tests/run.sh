#!/usr/bin/env bash
# The dashboard's browser tests (ctest `dashboard_browser`): web/tests/*.test.mjs under node's test
# runner, against build/bin/gpupool (oidc.test.mjs also runs fake_oidc_issuer.py: python3 and the
# openssl command). Exits 77 (ctest: skipped) with the reason when Chromium or the dashboard's npm
# packages are missing.
#   web/tests/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=${1:?usage: run.sh SOURCE_DIR BUILD_DIR}
build_dir=${2:?}
chromium=${GPUPOOL_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: $chromium not found: install Debian's chromium (scripts/install-deps.sh does)"
  exit 77
fi
if [ ! -d "$source_dir/web/node_modules/playwright-core" ]; then
  echo "SKIPPED: web/node_modules is missing: the build runs npm ci (GPUPOOL_WITH_WEB=ON)"
  exit 77
fi
export GPUPOOL_SOURCE_DIR="$source_dir" GPUPOOL_BUILD_DIR="$build_dir"
export GPUPOOL_SCREENSHOT_DIR="$build_dir/dashboard-screenshots"
cd "$source_dir/web"
# One file at a time (each starts its own server and browser; the machine may have two cores).
status=0
for file in tests/dashboard.test.mjs tests/oidc.test.mjs; do
  node --test "$file" || status=1
done
exit $status
