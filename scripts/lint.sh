#!/usr/bin/env bash
# Static checks, warnings as errors (`make lint`, and .ci/run):
#   1. clang-format --dry-run --Werror over src/, tests/ and bench/ (the style in .clang-format);
#   2. clang-tidy (the checks in .clang-tidy) over the .cc files of src/, with the compile commands
#      of BUILD_DIR (default build-tidy/: a clang configuration made here, never built), in
#      parallel.
# Every finding is printed as file:line:col with its check name; the exit code is non-zero if any.
# Fix it, or silence one line with `// NOLINT(check-name): why` where the check is wrong.
#
#   scripts/lint.sh [BUILD_DIR]                every .cc file of src/ (~10 s of CPU each)
#   scripts/lint.sh --since COMMIT [BUILD_DIR] only what changed since COMMIT (.ci/run's way)
#   scripts/lint.sh --list [--since COMMIT]   only print the files clang-tidy would check
#   JOBS=N (default: all cores)   LINT_TIDY_TESTS=1: also the unit tests (src/**/*_test.cc)
#
# clang-tidy 14 runs every check over the whole parsed text of a file, the standard library's,
# nlohmann/json's and Boost's headers included, so the full run costs about 30 minutes of CPU:
# more than CI's budget leaves. A full run that finds nothing on a clean tree therefore records
# its commit in .ci/tidy-clean-at (commit that file), and `--since "$(cat .ci/tidy-clean-at)"`
# checks only the .cc files changed since then, one file that includes each changed header (a
# header's findings are reported through any file that includes it), and everything when
# .clang-tidy itself changed or the commit is not in the history.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
list_only=0
if [ "${1:-}" = --list ]; then
  list_only=1
  shift
fi
since=""
if [ "${1:-}" = --since ]; then
  since=${2:?--since needs a commit}
  shift 2
fi
build_dir=${1:-build-tidy}
jobs=${JOBS:-$(nproc)}
cd "$root"

# The translation units to check, as absolute paths (the compile commands use them). Headers are
# checked through the .cc files that include them (HeaderFilterRegex in .clang-tidy).
if [ "${LINT_TIDY_TESTS:-0}" = 1 ]; then
  mapfile -t all_units < <(git ls-files 'src/*.cc')
else
  mapfile -t all_units < <(git ls-files 'src/*.cc' | grep -v '_test\.cc$')
fi
units=("${all_units[@]}")
if [ -n "$since" ]; then
  if ! git cat-file -e "$since^{commit}" 2>/dev/null; then
    echo >&2 "lint: $since is not in this clone's history: checking every file"
  elif ! git diff --quiet "$since" -- .clang-tidy; then
    echo >&2 "lint: .clang-tidy changed since $since: checking every file"
  else
    mapfile -t changed < <(git diff --name-only --diff-filter=d "$since" -- 'src/*.cc' 'src/*.h')
    declare -A wanted=()
    for file in "${changed[@]}"; do
      case $file in
      *.cc) wanted[$file]=1 ;;
      *.h)
        # The header's own .cc if it has one, else the first file that includes it.
        includer=${file%.h}.cc
        if [ ! -f "$includer" ]; then
          includer=$(printf '%s\n' "${all_units[@]}" |
            xargs grep -l -F "#include \"${file#src/}\"" 2>/dev/null | head -n 1 || true)
        fi
        if [ -n "$includer" ]; then wanted[$includer]=1; fi
        ;;
      esac
    done
    units=()
    for file in "${all_units[@]}"; do
      if [ -n "${wanted[$file]:-}" ]; then units+=("$file"); fi
    done
    echo >&2 "lint: ${#changed[@]} files of src/ changed since $since"
  fi
fi
if ((list_only == 1)); then
  ((${#units[@]} == 0)) || printf '%s\n' "${units[@]}"
  exit 0
fi

for tool in clang-format-14 clang-tidy-14; do
  if ! command -v "$tool" >/dev/null; then
    echo "lint: $tool not found (scripts/install-deps.sh --clang installs it)" >&2
    exit 1
  fi
done

echo "lint: clang-format over src tests bench"
git ls-files -z 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' |
  xargs -0 clang-format-14 --dry-run --Werror

if ((${#units[@]} == 0)); then
  echo "lint: no file for clang-tidy to check"
  exit 0
fi
units=("${units[@]/#/$root/}")

# The compile commands of a clang configuration of the project (configured, never built): clang-tidy
# is clang, and the flags gcc gets differ (Asio's coroutines are switched on by hand for clang,
# gcc's precompiled header is unreadable to clang).
# Configured every time (a few seconds when nothing changed): compile commands from an older tree
# lack the files added or moved since, and run-clang-tidy skips a file it has no command for.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DGPUPOOL_PCH=OFF -DGPUPOOL_UNITY_BUILD=OFF \
  -DGPUPOOL_WITH_WEB=OFF >/dev/null
tidy_db=$build_dir
for unit in "${units[@]}"; do
  if ! grep -qF "\"file\": \"$unit\"" "$tidy_db/compile_commands.json"; then
    echo "lint: $unit has no compile command in $tidy_db: it would not be checked" >&2
    exit 1
  fi
done

echo "lint: clang-tidy over ${#units[@]} files of src/ ($jobs jobs)"

if command -v run-clang-tidy-14 >/dev/null; then
  # run-clang-tidy takes regular expressions: anchor each path so a.cc never matches xa.cc.
  patterns=()
  for unit in "${units[@]}"; do patterns+=("^$(printf '%s' "$unit" | sed 's/[.[\*^$+?(){}|]/\\&/g')\$"); done
  # It always asks for colours; a CI log reads better without the escape codes.
  run-clang-tidy-14 -clang-tidy-binary "$(command -v clang-tidy-14)" -p "$tidy_db" -j "$jobs" \
    -quiet "${patterns[@]}" | sed 's/\x1b\[[0-9;]*m//g'
else
  printf '%s\0' "${units[@]}" | xargs -0 -n 1 -P "$jobs" clang-tidy-14 -p "$tidy_db" --quiet
fi
echo "lint: clean"
# A full run on a clean tree is the new starting point of `--since` (see the top).
if [ -z "$since" ] && [ "${LINT_TIDY_TESTS:-0}" != 1 ] && git diff --quiet HEAD 2>/dev/null; then
  git rev-parse HEAD >.ci/tidy-clean-at
  echo "lint: recorded $(cat .ci/tidy-clean-at) in .ci/tidy-clean-at: commit it"
fi
