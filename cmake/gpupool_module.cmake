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
  gtest_discover_tests(gpupool_${T_NAME}_test DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS unit_${T_NAME} ${T_PROPERTIES})
endfunction()

function(gpupool_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GPUPOOL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
