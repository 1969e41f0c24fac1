# SPDX-License-Identifier: MIT
# cmake -DBINARY=... -DREPORT_DIR=... -DLINK_MAP=... -DLINK_DIR=... -DEXPECTED_GTEST=... -P gtest_consumer_check.cmake
# The consumer projects' `gtest_consumer` test. Two checks:
# 1. One GoogleTest in the link, and the expected one. BINARY was linked with
#    -Wl,-Map=LINK_MAP. GNU ld's map names every input file of the link
#    ("LOAD <file>") and every archive member it took ("<archive>(<member>)"),
#    with the paths the link command gave (relative ones from LINK_DIR, where
#    the link ran). So the map shows what was actually linked, whatever put it
#    on the command line (a target, a path, a generator expression, a
#    find_package() inside heapgate), and with any generator. Every GoogleTest
#    library in it (libgtest, libgtest_main, libgmock, libgmock_main, static
#    or shared) must be one file: EXPECTED_GTEST, the consumer's own GoogleTest
#    (its vendored build, or the system's through find_package). A second copy,
#    even one the linker took nothing from, fails.
# 2. The suite runs with heapgate's listener and measures: exit status 0, and
#    REPORT_DIR/<binary>.json shows GtestConsumer.ThreeBlocks with exactly 3
#    allocations under its HEAPGATE_LIMIT_ALLOCATIONS(3) budget, and
#    GtestConsumer.AllowedLeak with its 1 leaked block allowed.
cmake_minimum_required(VERSION 3.21)
foreach(var BINARY REPORT_DIR LINK_MAP LINK_DIR EXPECTED_GTEST)
  if(NOT ${var})
    message(FATAL_ERROR "gtest_consumer_check.cmake: ${var} is required")
  endif()
endforeach()

set(errors "")

# 1. The link map.
file(STRINGS "${LINK_MAP}" map_lines REGEX "lib(gtest|gmock)")
file(REAL_PATH "${EXPECTED_GTEST}" expected)
set(linked "")
foreach(line IN LISTS map_lines)
  if(line MATCHES "^LOAD (.+)$")
    set(file "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^([^ (]+\\.a)\\(")
    set(file "${CMAKE_MATCH_1}")
  else()
    continue()
  endif()
  cmake_path(GET file FILENAME name)
  if(name MATCHES "^lib(gtest|gmock)(_main)?d?\\.(a|so(\\.[0-9.]+)?)$")
    file(REAL_PATH "${file}" file BASE_DIRECTORY "${LINK_DIR}")
    list(APPEND linked "${file}")
  endif()
endforeach()
list(REMOVE_DUPLICATES linked)
if(NOT linked)
  # Not a pass: the map format was not understood (another linker?).
  list(APPEND errors "${LINK_MAP} names no GoogleTest library; is it a GNU ld map?")
elseif(NOT linked STREQUAL expected)
  list(JOIN linked "\n    " linked)
  list(APPEND errors "GoogleTest libraries in the link:\n    ${linked}\n  expected only ${expected}")
else()
  message(STATUS "one GoogleTest in the link: ${expected}")
endif()

# 2. The run and its report. The flags are explicit so that no HEAPGATE_*
# variable of the caller's environment changes them; --heapgate_strict makes
# profiling unavailable (jemalloc not linked) a failure rather than a skip.
file(REMOVE_RECURSE "${REPORT_DIR}")
execute_process(COMMAND "${BINARY}" --heapgate_mode=counters --heapgate_strict "--heapgate_report=${REPORT_DIR}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(NOT result EQUAL 0)
  list(APPEND errors "${BINARY} exited with ${result}")
endif()
cmake_path(GET BINARY FILENAME binary_name)
set(report "${REPORT_DIR}/${binary_name}.json")
if(NOT EXISTS "${report}")
  list(APPEND errors "no report ${report}")
else()
  file(READ "${report}" json)
  # expect(<what> <expected value> <JSON path...>)
  function(expect what expected)
    string(JSON value ERROR_VARIABLE error GET "${json}" ${ARGN})
    if(error)
      set(value "${error}")
    endif()
    if(NOT value STREQUAL expected)
      set(errors ${errors} "${report}: ${what} is ${value}, expected ${expected}" PARENT_SCOPE)
    endif()
  endfunction()
  expect("run.mode" counters run mode)
  set(found "")
  string(JSON count ERROR_VARIABLE error LENGTH "${json}" tests)
  if(error)
    set(count 0)
  endif()
  foreach(i RANGE ${count})
    if(i EQUAL count)
      break()
    endif()
    string(JSON name GET "${json}" tests ${i} name)
    list(APPEND found "${name}")
    if(name STREQUAL "GtestConsumer.ThreeBlocks")
      expect("${name} allocations" 3 tests ${i} metrics allocations)
      expect("${name} live_allocations" 0 tests ${i} metrics live_allocations)
      expect("${name} allocations budget" 3 tests ${i} budgets allocations)
      expect("${name} verdict" pass tests ${i} verdict)
    elseif(name STREQUAL "GtestConsumer.AllowedLeak")
      expect("${name} live_allocations" 1 tests ${i} metrics live_allocations)
      expect("${name} verdict" pass tests ${i} verdict)
    endif()
  endforeach()
  foreach(name GtestConsumer.ThreeBlocks GtestConsumer.AllowedLeak)
    if(NOT name IN_LIST found)
      list(APPEND errors "${report}: no test ${name} (tests: ${found})")
    endif()
  endforeach()
endif()

if(errors)
  list(JOIN errors "\n  " errors)
  message(FATAL_ERROR "gtest consumer:\n  ${errors}")
endif()
message(STATUS "gtest consumer: ${report} OK")
