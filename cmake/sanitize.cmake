# Instrumented builds: sanitizers, fuzzing, warnings as errors (`make sanitize`, `make lint`).
#
#   GPUPOOL_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer on everything the project
#                        compiles and links (libraries, tests, executables). Any UB report aborts
#                        (-fno-sanitize-recover=all), so a test that triggers it fails. jemalloc is
#                        left out: ASan must own malloc to see overflows and use-after-free.
#   GPUPOOL_FUZZ=ON      clang only. Adds libFuzzer's coverage instrumentation
#                        (-fsanitize=fuzzer-no-link) to all project code, so the fuzz targets and
#                        the sanitizer suite share one build directory, and adds fuzz/ if present.
#                        fuzz/CMakeLists.txt declares its targets with gpupool_fuzz_target().
#   GPUPOOL_WERROR=ON    warnings are errors in the project's own code (CI, `make sanitize`).
#
# Included from the top-level CMakeLists.txt before any target is defined.

option(GPUPOOL_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(GPUPOOL_FUZZ "Add libFuzzer instrumentation and the fuzz/ targets (clang only)" OFF)
option(GPUPOOL_WERROR "Treat compiler warnings in the project's own code as errors" OFF)

# `make sanitize` builds with CMAKE_BUILD_TYPE=Sanitize: light optimisation (a sanitized -O0
# suite runs several times slower, -O2 compiles slower and hides frames) and line tables only,
# which is all a sanitizer stack trace needs and keeps object files and links small. Assertions
# stay on.
# project() has already created these as empty cache entries; fill them unless the user did.
foreach(lang C CXX)
  if(NOT CMAKE_${lang}_FLAGS_SANITIZE)
    set(CMAKE_${lang}_FLAGS_SANITIZE "-O1 -gline-tables-only" CACHE STRING
        "Flags used by the ${lang} compiler during SANITIZE builds." FORCE)
  endif()
endforeach()

if(GPUPOOL_SANITIZE)
  set(gpupool_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  add_compile_options(${gpupool_sanitizers})
  add_link_options(-fsanitize=address,undefined)
  # A normal variable shadows the option of the same name (CMP0077), whatever the cache says.
  set(GPUPOOL_WITH_JEMALLOC OFF)
endif()

if(GPUPOOL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPUPOOL_FUZZ needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  # The coverage callbacks the instrumentation calls are defined by the sanitizer runtimes (as
  # weak no-ops) and by libFuzzer; without ASan, tests and tools link libFuzzer's no-main copy.
  if(NOT GPUPOOL_SANITIZE)
    add_link_options(-fsanitize=fuzzer-no-link)
  endif()
endif()

# gpupool_fuzz_target(NAME quantity SOURCES quantity_fuzz.cc DEPS model)
#   -> executable gpupool_fuzz_<NAME>, linked with libFuzzer's main (-fsanitize=fuzzer), with
#      the project's warnings. For fuzz/CMakeLists.txt; a no-op unless GPUPOOL_FUZZ is on.
function(gpupool_fuzz_target)
  cmake_parse_arguments(F "" "NAME" "SOURCES;DEPS;LIBS" ${ARGN})
  if(NOT GPUPOOL_FUZZ)
    return()
  endif()
  add_executable(gpupool_fuzz_${F_NAME} ${F_SOURCES})
  foreach(dep IN LISTS F_DEPS)
    target_link_libraries(gpupool_fuzz_${F_NAME} PRIVATE gpupool_${dep})
  endforeach()
  target_link_libraries(gpupool_fuzz_${F_NAME} PRIVATE ${F_LIBS})
  target_compile_options(gpupool_fuzz_${F_NAME} PRIVATE -fsanitize=fuzzer)
  target_link_options(gpupool_fuzz_${F_NAME} PRIVATE -fsanitize=fuzzer)
  gpupool_warnings(gpupool_fuzz_${F_NAME})
endfunction()

# Sanitizer options for everything ctest runs, and so for the `gpupool` and `gpupool serve`
# processes the tests start (they inherit ctest's environment). ctest reads this file before it
# runs any test; a variable already set in the caller's environment wins.
#   abort_on_error: a sanitizer report kills the process with SIGABRT. Its default exit code, 1,
#     is the code the CLI's tests expect for rejected input, so a report would pass unnoticed.
#   halt_on_error, print_stacktrace: stop at the first report, and show where UB happened.
#   detect_leaks: LeakSanitizer at exit (default on x86-64 Linux; explicit for the record).
if(GPUPOOL_SANITIZE)
  set(gpupool_sanitizer_env ${PROJECT_BINARY_DIR}/sanitizer_env.cmake)
  file(WRITE ${gpupool_sanitizer_env} [=[
if(NOT DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "halt_on_error=1:abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1")
endif()
if(NOT DEFINED ENV{UBSAN_OPTIONS})
  set(ENV{UBSAN_OPTIONS} "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
endif()
]=])
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY TEST_INCLUDE_FILES
               ${gpupool_sanitizer_env})
endif()
