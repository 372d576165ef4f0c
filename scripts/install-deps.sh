#!/usr/bin/env bash
# Installs the Debian packages gpupool needs to build, test and run. Idempotent: it asks apt only
# for what is missing, and does nothing when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  # LLVM's linker: links the ~50 test and tool executables in a third of GNU ld's time.
  lld
  nlohmann-json3-dev libyaml-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev sqlite3 libpq-dev postgresql
  libboost-dev libcpp-httplib-dev libjwt-dev libssl-dev openssl libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  curl wrk
  # End-to-end test drivers (tests/server/*.py, tests/slurm/) and scripts/lint.sh.
  python3
  # The Slurm backend's tests and benchmark run a loopback cluster (scripts/slurm-test-cluster.sh).
  # Never slurm-wlm-emulator: it is broken in Debian 12 and takes over these daemons' names.
  slurmctld slurmd slurm-client munge slurmrestd slurm-wlm-jwt-plugin
  # The web dashboard's browser tests (web/tests/): Debian's Chromium, driven by playwright-core.
  chromium
)
# The web dashboard is built with node and npm. Debian's nodejs (18 on Debian 12) and npm do;
# where a node is already installed (e.g. NodeSource's, which bundles npm) it is used as it is:
# Debian's npm would conflict with it.
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs npm)
elif ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi
# --clang: what `make sanitize` and scripts/lint.sh need besides (Debian 12's LLVM 14: the
# compiler, the sanitizer and libFuzzer runtimes, clang-tidy with run-clang-tidy, clang-format).
if [ "${1:-}" = --clang ]; then
  packages=(clang-14 libclang-rt-14-dev clang-tidy-14 clang-format-14)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
