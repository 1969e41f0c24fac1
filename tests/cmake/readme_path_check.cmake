# SPDX-License-Identifier: MIT
# cmake -DBINARY=... -DWORK=... -P readme_path_check.cmake
# The README's path, done verbatim on a binary built from its snippet: run it
# directly with --heapgate_baselines and --heapgate_report. The first run
# measures and records the baseline (exit 0); the same binary with one more
# allocation planted fails as regressed (exit 1), and with a planted leak as
# leaked (exit 1), each naming the test.
cmake_minimum_required(VERSION 3.21)
foreach(var BINARY WORK)
  if(NOT ${var})
    message(FATAL_ERROR "readme_path_check.cmake: ${var} is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
set(errors "")
function(run_case name expected_exit expected_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=HEAPGATE_MODE --unset=MALLOC_CONF ${ARGN}
    "${BINARY}" "--heapgate_baselines=${WORK}/baselines" "--heapgate_report=${WORK}/${name}"
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL expected_exit)
    set(errors ${errors} "${name}: exit ${result}, expected ${expected_exit}:\n${output}" PARENT_SCOPE)
  elseif(NOT output MATCHES "${expected_text}")
    set(errors ${errors} "${name}: output lacks \"${expected_text}\":\n${output}" PARENT_SCOPE)
  else()
    message(STATUS "${name}: exit ${result}, says \"${expected_text}\"")
  endif()
endfunction()
run_case(first 0 "created .*baselines/")
run_case(regression 1 "GtestConsumer.Planted regressed \\(counters mode\\)" CONSUMER_EXTRA_ALLOCATION=1)
run_case(leak 1 "GtestConsumer.Planted leaked \\(counters mode\\)" CONSUMER_LEAK=1)
if(errors)
  list(JOIN errors "\n  " errors)
  message(FATAL_ERROR "README path:\n  ${errors}")
endif()
