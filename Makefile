# gpupool: the two commands a newcomer needs are `make run` and `make test`.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: deps deps-clang build test run bench format clean sanitize sanitize-unit lint fuzz fuzz-ci

# `make sanitize`: the whole suite under AddressSanitizer and UBSan, built with clang in its own
# directory. The same directory carries libFuzzer's instrumentation (GPUPOOL_FUZZ) so the fuzz
# targets reuse its objects, and treats warnings as errors. See cmake/sanitize.cmake. The web
# dashboard is JavaScript (nothing to sanitize), so this directory builds without it and does
# not share web/node_modules with the main build.
SANITIZE_DIR ?= build-sanitize
SANITIZE_FLAGS ?= -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DGPUPOOL_SANITIZE=ON -DGPUPOOL_FUZZ=ON -DGPUPOOL_WERROR=ON \
  -DGPUPOOL_BUILD_BENCH=OFF -DGPUPOOL_WITH_JEMALLOC=OFF -DGPUPOOL_WITH_WEB=OFF

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

deps-clang:
	@bash scripts/install-deps.sh --clang

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	bash scripts/run-tests.sh $(BUILD_DIR)

run: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target gpupool
	bash scripts/run-demo.sh $(BUILD_DIR)

bench: build
	cmake --build $(BUILD_DIR) -j $(JOBS) --target gpupool_bench_tools
	bash scripts/run-bench.sh $(BUILD_DIR)

$(SANITIZE_DIR)/build.ninja: | deps deps-clang
	cmake -S . -B $(SANITIZE_DIR) -G Ninja $(SANITIZE_FLAGS)

sanitize: deps deps-clang $(SANITIZE_DIR)/build.ninja
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	GPUPOOL_TEST_JOBS=$$(nproc) bash scripts/run-tests.sh $(SANITIZE_DIR)

# `make sanitize-unit`: what .ci/run affords of the above. The whole sanitized build does not fit
# CI's 40 minutes on 2 cores beside `make test` (docs/BENCHMARKS.md, "CI time"), so CI builds
# only the unit tests of the modules that take outside input or hold the state: the parsers
# (codec, model, config), the scheduler, the store, the metrics, the scheduling loop (controller)
# and the API (HTTP, routing, JWT), and runs the tests labelled unit_<module>. The CLI, the end-to-end tests in
# tests/ and the remaining modules run under the sanitizers in `make sanitize` only.
SANITIZE_UNIT_MODULES ?= common codec model config scheduler store metrics controller api
empty :=
space := $(empty) $(empty)
sanitize-unit: deps deps-clang $(SANITIZE_DIR)/build.ninja
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target $(SANITIZE_UNIT_MODULES:%=gpupool_%_test)
	GPUPOOL_TEST_JOBS=$$(nproc) bash scripts/run-tests.sh $(SANITIZE_DIR) -L '^unit_($(subst $(space),|,$(strip $(SANITIZE_UNIT_MODULES))))$$'

# clang-format and clang-tidy, warnings as errors (scripts/lint.sh, with a clang configuration
# of its own in build-tidy/).
lint: deps deps-clang
	bash scripts/lint.sh

# `make fuzz`: every libFuzzer target of fuzz/ for FUZZ_SECONDS each, two at a time, in the
# sanitizer build; `make fuzz-ci` replays every committed corpus, then fuzzes each target for
# FUZZ_CI_SECONDS (.ci/run). Findings go to $(SANITIZE_DIR)/fuzz/artifacts/ (fuzz/README.md).
FUZZ_SECONDS ?= 60
FUZZ_CI_SECONDS ?= 15

fuzz: deps deps-clang $(SANITIZE_DIR)/build.ninja
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target gpupool_fuzz_all
	bash scripts/fuzz.sh run $(SANITIZE_DIR) $(FUZZ_SECONDS)

fuzz-ci: deps deps-clang $(SANITIZE_DIR)/build.ninja
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target gpupool_fuzz_all
	bash scripts/fuzz.sh ci $(SANITIZE_DIR) $(FUZZ_CI_SECONDS)

format:
	find src tests bench -name '*.h' -o -name '*.cc' | xargs clang-format-14 -i

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR)
