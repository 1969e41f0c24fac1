# SPDX-License-Identifier: MIT
# Runs ci/gate.sh against sample_suite twice: a passing filter (exit 0) and a
# leaking test (exit 1); checks the reports, the HTML page, the kept profile
# and the GitHub step summary.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{GITHUB_STEP_SUMMARY} "${WORK}/step-summary.md")
unset(ENV{MALLOC_CONF})

execute_process(COMMAND sh "${GATE}" -H "${HEAPGATE}" -b "${WORK}/baselines" -r "${WORK}/report" -- "${SUITE}" --gtest_filter=Sample.Clean
  RESULT_VARIABLE pass_status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT pass_status EQUAL 0)
  message(FATAL_ERROR "gate on a clean test exited ${pass_status}:\n${out}\n${err}")
endif()
foreach(f report/sample_suite.json report/sample_suite.junit.xml report/sample_suite.md report/sample_suite.html
          baselines/sample_suite.json step-summary.md)
  if(NOT EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "gate did not write ${WORK}/${f}")
  endif()
endforeach()

execute_process(COMMAND sh "${GATE}" -H "${HEAPGATE}" -b "${WORK}/baselines" -r "${WORK}/report" -- "${SUITE}" --gtest_filter=Sample.Leaks
  RESULT_VARIABLE leak_status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT leak_status EQUAL 1)
  message(FATAL_ERROR "gate on a leaking test exited ${leak_status}, expected 1:\n${out}\n${err}")
endif()
file(READ "${WORK}/step-summary.md" summary)
if(NOT summary MATCHES "leaked")
  message(FATAL_ERROR "the step summary does not mention the leak:\n${summary}")
endif()
file(GLOB profiles "${WORK}/report/profiles/sample_suite/*.heap")
if(NOT profiles)
  message(FATAL_ERROR "the leak's heap profile was not kept in ${WORK}/report/profiles/")
endif()

execute_process(COMMAND sh "${GATE}" -H "${WORK}/no-such-heapgate" -- "${SUITE}"
  RESULT_VARIABLE missing_status OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT missing_status EQUAL 2 OR NOT err MATCHES "heapgate command line was not found")
  message(FATAL_ERROR "a missing heapgate should exit 2 saying so; got ${missing_status}: ${err}")
endif()

execute_process(COMMAND sh "${GATE}" -x RESULT_VARIABLE bad_status OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT bad_status EQUAL 2 OR NOT err MATCHES "unknown option -x")
  message(FATAL_ERROR "a bad option should exit 2 naming it; got ${bad_status}: ${err}")
endif()
