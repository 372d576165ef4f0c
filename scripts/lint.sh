#!/usr/bin/env bash
# Static checks, warnings as errors (`make lint`, and .ci/run):
#   1. clang-format --dry-run --Werror over src/, tests/ and bench/ (the style in .clang-format);
#   2. clang-tidy (the checks in .clang-tidy) over the .cc files of src/, with the compile commands
#      of BUILD_DIR (default build/, configured here if it is not yet), in parallel.
# Every finding is printed as file:line:col with its check name; the exit code is non-zero if any.
# Fix it, or silence one line with `// NOLINT(check-name): why` where the check is wrong.
#
#   scripts/lint.sh [BUILD_DIR]   JOBS=N (default: all cores)
#   LINT_TIDY_TESTS=1             also the unit tests beside the code (src/**/*_test.cc)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
jobs=${JOBS:-$(nproc)}
cd "$root"

for tool in clang-format-14 clang-tidy-14; do
  if ! command -v "$tool" >/dev/null; then
    echo "lint: $tool not found (scripts/install-deps.sh --clang installs it)" >&2
    exit 1
  fi
done

echo "lint: clang-format over src tests bench"
git ls-files -z 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' |
  xargs -0 clang-format-14 --dry-run --Werror

if [ ! -f "$build_dir/compile_commands.json" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi

# The compile commands without the precompiled header: clang-tidy cannot read GCC's (and each
# file is then checked for the includes it needs on its own).
tidy_db=$(mktemp -d)
trap 'rm -rf "$tidy_db"' EXIT
python3 - "$build_dir/compile_commands.json" >"$tidy_db/compile_commands.json" <<'PY'
import json, shlex, sys
commands = json.load(open(sys.argv[1]))
for entry in commands:
    args = shlex.split(entry["command"])
    kept = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "-include" and i + 1 < len(args) and args[i + 1].endswith("cmake_pch.hxx"):
            skip = True
            continue
        if arg == "-Winvalid-pch" or arg in ("-Wno-stringop-overflow", "-Wno-stringop-overread",
                                             "-Wno-restrict"):
            continue  # GCC-only flags of the precompiled-header build (gpupool_module.cmake)
        kept.append(arg)
    entry["command"] = shlex.join(kept)
json.dump(commands, sys.stdout)
PY

# The translation units to check, as absolute paths (the compile commands use them). Headers are
# checked through the .cc files that include them (HeaderFilterRegex in .clang-tidy).
if [ "${LINT_TIDY_TESTS:-0}" = 1 ]; then
  mapfile -t units < <(git ls-files 'src/*.cc' | sed "s|^|$root/|")
else
  mapfile -t units < <(git ls-files 'src/*.cc' | grep -v '_test\.cc$' | sed "s|^|$root/|")
fi
echo "lint: clang-tidy over ${#units[@]} files of src/ ($jobs jobs)"

if command -v run-clang-tidy-14 >/dev/null; then
  # run-clang-tidy takes regular expressions: anchor each path so a.cc never matches xa.cc.
  patterns=()
  for unit in "${units[@]}"; do patterns+=("^$(printf '%s' "$unit" | sed 's/[.[\*^$+?(){}|]/\\&/g')\$"); done
  run-clang-tidy-14 -clang-tidy-binary "$(command -v clang-tidy-14)" -p "$tidy_db" -j "$jobs" \
    -quiet "${patterns[@]}"
else
  printf '%s\0' "${units[@]}" | xargs -0 -n 1 -P "$jobs" clang-tidy-14 -p "$tidy_db" --quiet
fi
echo "lint: clean"
