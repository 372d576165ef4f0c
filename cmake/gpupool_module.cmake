# Helpers that keep every module's CMakeLists.txt to a few lines.
#
#   gpupool_module(NAME model SOURCES a.cc b.cc DEPS common PUBLIC_LIBS nlohmann_json::nlohmann_json)
#     -> static library gpupool_<NAME>, include root = src/, links gpupool_<dep> for each DEPS entry.
#   gpupool_module_test(NAME model SOURCES a_test.cc DEPS model)
#     -> test executable gpupool_<NAME>_test registered with gtest_discover_tests; its tests carry
#        the ctest label unit_<NAME> (`ctest -L '^unit_(model|config)$'` runs those modules' tests;
#        `make sanitize-unit` picks its modules this way).
include(GoogleTest)

function(gpupool_module)
  cmake_parse_arguments(M "OWN_PRECOMPILED_HEADER" "NAME" "SOURCES;DEPS;PUBLIC_LIBS;PRIVATE_LIBS"
                        ${ARGN})
  add_library(gpupool_${M_NAME} STATIC ${M_SOURCES})
  target_include_directories(gpupool_${M_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  foreach(dep IN LISTS M_DEPS)
    target_link_libraries(gpupool_${M_NAME} PUBLIC gpupool_${dep})
  endforeach()
  target_link_libraries(gpupool_${M_NAME} PUBLIC ${M_PUBLIC_LIBS} PRIVATE ${M_PRIVATE_LIBS})
  gpupool_warnings(gpupool_${M_NAME})
  if(M_OWN_PRECOMPILED_HEADER)
    gpupool_own_precompiled_header(gpupool_${M_NAME} LIBRARY)
  else()
    gpupool_precompile(gpupool_${M_NAME} LIBRARY)
  endif()
endfunction()

function(gpupool_module_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;DEPS;LIBS;PROPERTIES" ${ARGN})
  if(NOT GPUPOOL_BUILD_TESTS)
    return()
  endif()
  add_executable(gpupool_${T_NAME}_test ${T_SOURCES})
  foreach(dep IN LISTS T_DEPS)
    target_link_libraries(gpupool_${T_NAME}_test PRIVATE gpupool_${dep})
  endforeach()
  target_link_libraries(gpupool_${T_NAME}_test PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main)
  gpupool_test_definitions(gpupool_${T_NAME}_test)
  gpupool_warnings(gpupool_${T_NAME}_test)
  gpupool_test_build(gpupool_${T_NAME}_test)
  gtest_discover_tests(gpupool_${T_NAME}_test DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS unit_${T_NAME} ${T_PROPERTIES})
endfunction()

# Tests' own files are compiled without optimisation (GPUPOOL_UNOPTIMIZED_TESTS): the code they
# test is in the modules' libraries, optimised as the binaries are, while the tests' files are
# assertion macros and fixtures whose inlining at -O2 took half of their compile time, and
# they made up half of the build (docs/BENCHMARKS.md, "Build time").
option(GPUPOOL_UNOPTIMIZED_TESTS "Compile the tests' own files at -O0" ON)
function(gpupool_test_optimization target)
  if(GPUPOOL_UNOPTIMIZED_TESTS)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# The flags of a test executable's own files: optimisation as above and the tests' precompiled
# header (which must be built with the same optimisation to be used).
function(gpupool_test_build target)
  gpupool_test_optimization(${target})
  gpupool_precompile(${target} TEST)
endfunction()

# Where a test finds the sources' data files and the build's programs.
function(gpupool_test_definitions target)
  target_compile_definitions(${target} PRIVATE
    GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}" GPUPOOL_BINARY_DIR="${PROJECT_BINARY_DIR}")
endfunction()

function(gpupool_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GPUPOOL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Precompiled headers (GPUPOOL_PCH): most translation units include nlohmann/json.hpp, and the
# tests GoogleTest; parsing them took about a third of each file's compile time. Two headers are
# precompiled for the whole build, one for the libraries and one for the tests, and every target
# reuses its kind's (REUSE_FROM): precompiling them once per target cost ~7 s of CPU each, 40
# times over (docs/BENCHMARKS.md, "Build time"). A reused header is valid only for the same
# compiler options, so the owners below get the options of the targets that reuse them, and no
# macro definitions (GCC refuses a header built with a macro the user does not define; one the
# user defines and the header never reads is fine); a target with options of its own
# precompiles its own (gpupool_own_precompiled_header).
# Only headers of packages and of the standard library go here: a project header would make
# every file rebuild when it changes.
set(GPUPOOL_PCH_HEADERS <algorithm> <functional> <map> <memory> <optional> <string> <string_view>
                        <unordered_map> <vector> <nlohmann/json.hpp>)
set(GPUPOOL_PCH_TEST_HEADERS ${GPUPOOL_PCH_HEADERS} <gmock/gmock.h> <gtest/gtest.h>)

# GCC 12 no longer treats the standard headers as system headers once they come from a
# precompiled header, so its known false positives inside std::string at -O2 (GCC bugs 105329,
# 105651) stop being silenced and -Werror fails files that build without it. The sanitizer
# build (clang) checks the same bounds at run time.
function(gpupool_pch_warnings target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-stringop-overread -Wno-restrict)
  endif()
endfunction()

# The target that owns the precompiled header of `kind` (LIBRARY or TEST): an object library of
# one empty file, compiled with the flags of the targets that reuse its header.
function(gpupool_pch_owner kind out_var)
  set(owner gpupool_pch_${kind})
  if(NOT TARGET ${owner})
    set(source ${PROJECT_BINARY_DIR}/pch/${kind}.cc)
    file(WRITE ${source} "// The owner of the ${kind} precompiled header (cmake/gpupool_module.cmake).\n")
    add_library(${owner} OBJECT ${source})
    target_link_libraries(${owner} PRIVATE nlohmann_json::nlohmann_json)
    if(kind STREQUAL "TEST")
      target_link_libraries(${owner} PRIVATE GTest::gmock GTest::gtest)
      gpupool_test_optimization(${owner})
      target_precompile_headers(${owner} PRIVATE ${GPUPOOL_PCH_TEST_HEADERS})
    else()
      target_precompile_headers(${owner} PRIVATE ${GPUPOOL_PCH_HEADERS})
    endif()
    gpupool_warnings(${owner})
    gpupool_pch_warnings(${owner})
  endif()
  set(${out_var} ${owner} PARENT_SCOPE)
endfunction()

function(gpupool_precompile target kind)
  if(NOT GPUPOOL_PCH)
    return()
  endif()
  gpupool_pch_owner(${kind} owner)
  target_precompile_headers(${target} REUSE_FROM ${owner})
  gpupool_pch_warnings(${target})
endfunction()

# For a target compiled with flags of its own (a reused header must have been built with the same
# ones, or clang refuses it): its own precompiled header instead of the shared one
# (gpupool_module's OWN_PRECOMPILED_HEADER).
function(gpupool_own_precompiled_header target kind)
  if(NOT GPUPOOL_PCH)
    return()
  endif()
  if(kind STREQUAL "TEST")
    target_precompile_headers(${target} PRIVATE ${GPUPOOL_PCH_TEST_HEADERS})
  else()
    target_precompile_headers(${target} PRIVATE ${GPUPOOL_PCH_HEADERS})
  endif()
endfunction()

# Long tests first. Without timings of its own (a fresh clone), ctest starts tests in the order
# they were added, and the suite ended waiting on the long ones that came last (the browser test
# started when 796 of 832 had finished). A test's COST makes ctest start it earlier, by
# descending cost, so the short tests fill the other cores around it; once ctest has timings of
# its own it uses those. `gpupool_test_costs(NAME SECONDS ...)` sets it on tests that
# gtest_discover_tests finds at build time (their names exist only then) through a file ctest
# reads after theirs: call it after gtest_discover_tests, in the same directory. A name that no
# longer exists is ignored by ctest (the hint is lost; nothing fails).
function(gpupool_test_costs)
  set(pairs ${ARGN})
  set(text "# Written by gpupool_test_costs (cmake/gpupool_module.cmake).\n")
  while(pairs)
    list(POP_FRONT pairs name seconds)
    string(APPEND text "set_tests_properties(\"${name}\" PROPERTIES COST ${seconds})\n")
  endwhile()
  string(MD5 tag "${ARGN}")
  set(file "${CMAKE_CURRENT_BINARY_DIR}/gpupool_test_costs_${tag}.cmake")
  file(WRITE ${file} "${text}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()
