#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (fuzz/README.md), built in BUILD_DIR (build-sanitize) with
# GPUPOOL_FUZZ=ON.
#
#   scripts/fuzz.sh run   BUILD_DIR SECONDS [TARGET...]  fuzz each target SECONDS (`make fuzz`)
#   scripts/fuzz.sh ci    BUILD_DIR SECONDS [TARGET...]  replay every corpus, then fuzz each
#                                                        target SECONDS (`make fuzz-ci`)
#   scripts/fuzz.sh merge BUILD_DIR [TARGET...]          fold the inputs `run` found into
#                                                        fuzz/corpus/<target>, minimised
#   scripts/fuzz.sh seed  BUILD_DIR [TARGET...]          (re)seed fuzz/corpus/<target> from the
#                                                        fixtures, examples and fuzz/seeds
#
# `run` grows a working corpus per target in BUILD_DIR/fuzz/work/<target> (starting from the
# committed one) and writes crash, leak, timeout and OOM inputs to BUILD_DIR/fuzz/artifacts/
# <target>/ (both outside git: build directories are ignored). `ci` fuzzes into a temporary
# directory and leaves nothing behind but artifacts; it fails when any target crashes.
# FUZZ_JOBS (default: the number of cores, at most 2) targets run at a time, each on one core,
# at nice 19. Extra libFuzzer flags: FUZZ_FLAGS="-max_len=16384".
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: scripts/fuzz.sh run|ci|merge|seed BUILD_DIR [SECONDS] [TARGET...]}
build_dir=$(cd "${2:?build directory}" && pwd)
shift 2
seconds=0
if [ "$mode" = run ] || [ "$mode" = ci ]; then
  seconds=${1:?seconds per target}
  shift
fi
jobs=${FUZZ_JOBS:-$(($(nproc) < 2 ? $(nproc) : 2))}
# FUZZ_BIN_DIR: run copies of the executables (a long run while the build moves on; -fork=N
# re-executes the binary for each job).
bin_dir=${FUZZ_BIN_DIR:-$build_dir/fuzz}
corpus_root=$root/fuzz/corpus
work_root=$build_dir/fuzz/work
artifact_root=$build_dir/fuzz/artifacts

# Every target built, or those named.
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for exe in "$bin_dir"/gpupool_fuzz_*; do
    [ -x "$exe" ] && targets+=("${exe##*/gpupool_fuzz_}")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no targets in $bin_dir (configure with -DGPUPOOL_FUZZ=ON: make sanitize)" >&2
  exit 1
fi

# Inputs larger than this are not generated (bigger inputs mostly cost time, not coverage).
max_len() {
  case $1 in
    quantity | duration | access) echo 512 ;;
    jwt) echo 2048 ;;
    *) echo 8192 ;;
  esac
}

# The dictionaries of a target, joined into one file (libFuzzer takes one -dict).
dict_for() {
  local names
  case $1 in
    json) names="json" ;;
    yaml) names="yaml" ;;
    quantity | duration) names="quantity" ;;
    config_*) names="json yaml config quantity" ;;
    workflow) names="yaml workflow quantity" ;;
    template) names="yaml config" ;;
    k8s | node_import | scenario | manifest | catalog) names="yaml k8s quantity config" ;;
    access) names="access" ;;
    http) names="http access json" ;;
    jwt) names="json jwt" ;;
    *) names="" ;;
  esac
  local out=$build_dir/fuzz/dict/$1.dict
  mkdir -p "$build_dir/fuzz/dict"
  : >"$out"
  for name in $names; do
    [ -f "$root/fuzz/dict/$name.dict" ] && cat "$root/fuzz/dict/$name.dict" >>"$out"
  done
  [ -s "$out" ] && echo "-dict=$out"
  return 0
}

# Files of the repository that seed a target (`seed`): fixtures, examples, test data.
seed_sources() {
  local globs
  case $1 in
    json | config_*) globs="tests/cli/fixtures/*/*.json src/config/testdata/*/*.json examples/osmo/*.json" ;;
    yaml | k8s | scenario | manifest) globs="examples/*/*.yaml data/*/*.yaml data/*/*/*.yaml" ;;
    workflow) globs="examples/workflows/*.yaml" ;;
    node_import) globs="examples/cluster/*.yaml examples/cluster/real/* src/config/testdata/nodes.json" ;;
    *) globs="" ;;
  esac
  (cd "$root" && for glob in $globs; do for file in $glob; do [ -f "$file" ] && echo "$root/$file"; done; done)
  return 0
}

flags_for() {
  echo "-max_len=$(max_len "$1") -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $(dict_for "$1") ${FUZZ_FLAGS:-}"
}

# Runs "$@" for each target, FUZZ_JOBS at a time; returns non-zero when any failed.
failed_file=$(mktemp)
trap 'rm -f "$failed_file"' EXIT
for_each_target() {
  local function_name=$1
  local running=0
  for target in "${targets[@]}"; do
    ("$function_name" "$target" || echo "$target" >>"$failed_file") &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done
  wait
}

fuzz_one() {
  local target=$1 work=$2
  local exe=$bin_dir/gpupool_fuzz_$target log=$artifact_root/$target.log
  mkdir -p "$work" "$artifact_root/$target" "$corpus_root/$target"
  local status=0 TIMEFORMAT='%U %S'
  # shellcheck disable=SC2046
  { time nice -n 19 "$exe" $(flags_for "$target") -max_total_time="$seconds" \
    -artifact_prefix="$artifact_root/$target/" "$work" "$corpus_root/$target" >"$log" 2>&1; } \
    2>"$log.cpu" || status=1
  local cpu
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$log.cpu")
  if [ $status -eq 0 ]; then
    printf 'fuzz: %-26s ok   %s, %s s CPU\n' "$target" "$(summary "$log")" "$cpu"
  else
    printf 'fuzz: %-26s FAIL %s, %s s CPU (log: %s)\n' "$target" "$(summary "$log")" "$cpu" "$log"
    grep -a -m1 -E '^(broken invariant|==[0-9]+==ERROR|SUMMARY)' "$log" | sed 's/^/fuzz:   /' || true
    return 1
  fi
}

# "<executions> runs, corpus <n>[/<bytes>], cov: <edges> ft: <features>" from a libFuzzer log
# (also of -fork=N runs, whose status lines read "#<runs>: cov: ... corp: <n> ...").
summary() {
  local runs corpus line
  runs=$(grep -a -o 'stat::number_of_executed_units: [0-9]*' "$1" | awk '{print $2}')
  line=$(grep -a -E '^#[0-9]+:?[[:space:]]+(DONE|INITED|pulse|NEW|REDUCE|cov:)' "$1" | tail -1)
  [ -n "$runs" ] || runs=$(echo "$line" | grep -o '^#[0-9]*' | tr -d '#')
  corpus=$(echo "$line" | grep -o 'corp: [^ ]*' | cut -d' ' -f2)
  echo "${runs:-?} runs, corpus ${corpus:-?}, $(echo "$line" | grep -o 'cov: [0-9]* ft: [0-9]*')"
}

run_target() { fuzz_one "$1" "$work_root/$1"; }

ci_target() {
  local target=$1 exe=$bin_dir/gpupool_fuzz_$1 tmp
  mkdir -p "$artifact_root/$target"
  # Every committed input (including the regression reproducers) once.
  # shellcheck disable=SC2046
  if ! "$exe" $(flags_for "$target") -runs=0 -artifact_prefix="$artifact_root/$target/" \
    "$corpus_root/$target" >"$artifact_root/$target.replay.log" 2>&1; then
    printf 'fuzz: %-26s FAIL replaying fuzz/corpus/%s (log: %s)\n' "$target" "$target" \
      "$artifact_root/$target.replay.log"
    return 1
  fi
  # A target with a known finding being fixed elsewhere (fuzz/ci-skip.txt) is replayed only.
  local skip
  skip=$(awk -v t="$target" '$1 == t { $1 = ""; print substr($0, 2); exit }' \
    "$root/fuzz/ci-skip.txt" 2>/dev/null || true)
  if [ -n "$skip" ]; then
    printf 'fuzz: %-26s replayed only (fuzz/ci-skip.txt: %s)\n' "$target" "$skip"
    return 0
  fi
  tmp=$(mktemp -d)
  local status=0
  fuzz_one "$target" "$tmp" || status=1
  rm -rf "$tmp"
  return $status
}

# `-merge=1` keeps the inputs that add coverage; regression reproducers are kept whatever they
# add.
merge_into_corpus() {
  local target=$1
  shift
  local exe=$bin_dir/gpupool_fuzz_$target corpus=$corpus_root/$target new
  new=$(mktemp -d)
  mkdir -p "$corpus" "$artifact_root/$target"
  # shellcheck disable=SC2046
  if ! nice -n 19 "$exe" $(flags_for "$target") -merge=1 -artifact_prefix="$artifact_root/$target/" \
    "$new" "$corpus" "$@" >"$artifact_root/$target.merge.log" 2>&1; then
    echo "fuzz: $target: merge failed (log: $artifact_root/$target.merge.log)" >&2
    rm -rf "$new"
    return 1
  fi
  # Inputs that crash are left out of the merge; say so, they are findings.
  if grep -a -q 'Test unit written to' "$artifact_root/$target.merge.log"; then
    echo "fuzz: $target: some inputs crash (left out of the corpus):" >&2
    grep -a -E '^(broken invariant|SUMMARY)|Test unit written to' "$artifact_root/$target.merge.log" |
      sort -u | sed 's/^/fuzz:   /' >&2
  fi
  find "$corpus" -maxdepth 1 -type f ! -name 'regression-*' -delete
  cp "$new"/* "$corpus"/ 2>/dev/null || true
  rm -rf "$new"
  printf 'fuzz: %-26s corpus %s files, %s bytes\n' "$target" "$(find "$corpus" -type f | wc -l)" \
    "$(find "$corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
}

merge_target() { merge_into_corpus "$1" "$work_root/$1"; }

seed_target() {
  local target=$1 staging
  staging=$(mktemp -d)
  [ -d "$root/fuzz/seeds/$target" ] && cp "$root/fuzz/seeds/$target"/* "$staging"/
  local n=0
  while read -r file; do
    # Larger files would weigh on the corpus; their small cousins carry the same syntax. Those
    # over the target's max_len are read truncated when fuzzing.
    [ "$(stat -c %s "$file")" -le 24576 ] || continue
    n=$((n + 1))
    cp "$file" "$staging/fixture-$n-${file##*/}"
  done < <(seed_sources "$target")
  merge_into_corpus "$target" "$staging"
  local status=$?
  rm -rf "$staging"
  return $status
}

mkdir -p "$artifact_root"
case $mode in
  run) for_each_target run_target ;;
  ci) for_each_target ci_target ;;
  merge) for_each_target merge_target ;;
  seed) for_each_target seed_target ;;
  *)
    echo "fuzz: unknown mode $mode (run, ci, merge, seed)" >&2
    exit 2
    ;;
esac
if [ -s "$failed_file" ]; then
  echo "fuzz: failed: $(sort "$failed_file" | tr '\n' ' ')" >&2
  exit 1
fi
