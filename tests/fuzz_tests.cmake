# SPDX-License-Identifier: MIT
# The libFuzzer targets (tests/fuzz/, docs/fuzzing.md), label `fuzz`. They
# need clang, and this build may use another compiler (CI's is g++), so
# `fuzz.build` configures and builds tests/fuzz as a project of its own with
# clang in <build>/fuzz (scripts/fuzz.sh --build; ccache makes a rebuild
# cheap), and `fuzz.<target>` runs each target for HEAPGATE_FUZZ_SECONDS over
# its checked-in seeds, failing on any crash, leak, UBSan report, hang or
# broken property.
#
# HEAPGATE_FUZZ defaults to ON when clang++ can link -fsanitize=fuzzer; the
# probe compiles one tiny target at configure time, once (cached).
# The HTTP target's seeds through the real server, with the target's own
# exchange and property (tests/fuzz/http_exchange.h), built with this build's
# compiler (label `http`).
if(TARGET heapgate::http)
  heapgate_add_test(http_fuzz_seeds_test
    SOURCES integration/http_fuzz_seeds_test.cpp
    LIBRARIES heapgate::http
    DEFINITIONS "HEAPGATE_HTTP_SEEDS=\"${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/http_request\""
    LABELS http fuzz)
  target_include_directories(http_fuzz_seeds_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz)
endif()

find_program(HEAPGATE_FUZZ_CXX NAMES clang++ clang++-14)
find_program(HEAPGATE_FUZZ_CC NAMES clang clang-14)
mark_as_advanced(HEAPGATE_FUZZ_CXX HEAPGATE_FUZZ_CC)
if(NOT DEFINED HEAPGATE_FUZZ_SUPPORTED)
  set(_why "")
  if(NOT HEAPGATE_FUZZ_CXX OR NOT HEAPGATE_FUZZ_CC)
    set(_why "clang and clang++ are not on PATH")
  else()
    set(_probe_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe)
    file(WRITE ${_probe_dir}/probe.cpp
      "#include <cstddef>\n#include <cstdint>\n"
      "extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
    execute_process(
      COMMAND ${HEAPGATE_FUZZ_CXX} -fsanitize=fuzzer,address,undefined probe.cpp -o probe
      WORKING_DIRECTORY ${_probe_dir} RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT _rc EQUAL 0)
      set(_why "${HEAPGATE_FUZZ_CXX} cannot link -fsanitize=fuzzer,address,undefined (Debian: apt-get install libclang-rt-14-dev)")
    endif()
  endif()
  if(_why)
    set(HEAPGATE_FUZZ_SUPPORTED OFF CACHE INTERNAL "")
    set(HEAPGATE_FUZZ_WHY "${_why}" CACHE INTERNAL "")
  else()
    set(HEAPGATE_FUZZ_SUPPORTED ON CACHE INTERNAL "")
  endif()
endif()
option(HEAPGATE_FUZZ "Build and run the libFuzzer targets (ctest -L fuzz), with clang" ${HEAPGATE_FUZZ_SUPPORTED})
set(HEAPGATE_FUZZ_SECONDS 10 CACHE STRING "How long ctest runs each fuzz target")
if(NOT HEAPGATE_FUZZ)
  message(STATUS "heapgate: fuzz targets skipped: HEAPGATE_FUZZ is OFF")
  return()
endif()
if(NOT HEAPGATE_FUZZ_SUPPORTED)
  message(STATUS "heapgate: fuzz targets skipped: ${HEAPGATE_FUZZ_WHY}; fix: apt-get install clang "
                 "libclang-rt-14-dev (scripts/setup.sh does), then reconfigure, or build them apart with "
                 "scripts/fuzz.sh (CC=clang CXX=clang++)")
  return()
endif()

include(${PROJECT_SOURCE_DIR}/tests/fuzz/targets.cmake)
set(_fuzz_build ${CMAKE_BINARY_DIR}/fuzz)
message(STATUS "heapgate: fuzz targets: ctest -L fuzz builds them with ${HEAPGATE_FUZZ_CXX} in ${_fuzz_build}")
set(_fuzz_env
  HEAPGATE_FUZZ_BUILD_DIR=${_fuzz_build}
  HEAPGATE_FUZZ_CORPUS=${_fuzz_build}/ctest-corpus
  "HEAPGATE_FUZZ_CMAKE_ARGS=-DHEAPGATE_WERROR=${HEAPGATE_WERROR}"
  CC=${HEAPGATE_FUZZ_CC} CXX=${HEAPGATE_FUZZ_CXX})
add_test(NAME fuzz.build
  COMMAND ${CMAKE_COMMAND} -E env ${_fuzz_env} HEAPGATE_BUILD_JOBS=2
          ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh --build)
# RUN_SERIAL: the build takes both cores of a CI runner.
set_tests_properties(fuzz.build PROPERTIES LABELS "fuzz;long" FIXTURES_SETUP heapgate_fuzz_build RUN_SERIAL ON
  TIMEOUT 900)
foreach(_t IN LISTS HEAPGATE_FUZZ_TARGETS)
  # From the seeds each time (HEAPGATE_FUZZ_FRESH), so a run is what CI ran.
  add_test(NAME fuzz.${_t}
    COMMAND ${CMAKE_COMMAND} -E env ${_fuzz_env} HEAPGATE_FUZZ_NO_BUILD=1 HEAPGATE_FUZZ_FRESH=1
            ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh ${HEAPGATE_FUZZ_SECONDS} ${_t})
  set_tests_properties(fuzz.${_t} PROPERTIES LABELS "fuzz;long" FIXTURES_REQUIRED heapgate_fuzz_build
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:")
endforeach()
unset(_fuzz_build)
unset(_fuzz_env)
