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
  cmake_parse_arguments(M "" "NAME" "SOURCES;DEPS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  add_library(gpupool_${M_NAME} STATIC ${M_SOURCES})
  target_include_directories(gpupool_${M_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  foreach(dep IN LISTS M_DEPS)
    target_link_libraries(gpupool_${M_NAME} PUBLIC gpupool_${dep})
  endforeach()
  target_link_libraries(gpupool_${M_NAME} PUBLIC ${M_PUBLIC_LIBS} PRIVATE ${M_PRIVATE_LIBS})
  gpupool_warnings(gpupool_${M_NAME})
  gpupool_precompile(gpupool_${M_NAME} LIBRARY)
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
  target_compile_definitions(gpupool_${T_NAME}_test PRIVATE
    GPUPOOL_SOURCE_DIR="${PROJECT_SOURCE_DIR}" GPUPOOL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gpupool_warnings(gpupool_${T_NAME}_test)
  gpupool_precompile(gpupool_${T_NAME}_test TEST)
  gtest_discover_tests(gpupool_${T_NAME}_test DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS unit_${T_NAME} ${T_PROPERTIES})
endfunction()

function(gpupool_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GPUPOOL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Precompiled headers (GPUPOOL_PCH): most translation units include nlohmann/json.hpp, and the
# tests GoogleTest; parsing them took about a third of each file's compile time. A module's
# library and its tests each precompile these once. Only headers of packages and of the standard
# library go here: a project header would make every file rebuild when it changes.
function(gpupool_precompile target kind)
  if(NOT GPUPOOL_PCH)
    return()
  endif()
  set(headers <algorithm> <functional> <map> <memory> <optional> <string> <string_view>
              <unordered_map> <vector> <nlohmann/json.hpp>)
  if(kind STREQUAL "TEST")
    list(APPEND headers <gmock/gmock.h> <gtest/gtest.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 no longer treats the standard headers as system headers once they come from a
    # precompiled header, so its known false positives inside std::string at -O2 (GCC bugs
    # 105329, 105651) stop being silenced and -Werror fails files that build without it. The
    # sanitizer build (clang) checks the same bounds at run time.
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-stringop-overread -Wno-restrict)
  endif()
endfunction()
