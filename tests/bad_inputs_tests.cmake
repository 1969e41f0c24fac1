# SPDX-License-Identifier: MIT
# The bad-input catalogue (docs/bad-inputs.md): one test per row, each running
# the real `heapgate` executable, the real plugin binary (sample_suite) or a
# real HTTP client on loopback, plus a check that rows and tests match.
# Label `bad_inputs`.
if(NOT TARGET heapgate_cli OR NOT TARGET sample_suite OR NOT TARGET heapgate::http)
  return()
endif()
heapgate_add_test(bad_inputs_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES e2e/bad_inputs_test.cpp
  LIBRARIES heapgate::http heapgate::httplib nlohmann_json::nlohmann_json
  LABELS e2e bad_inputs
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\""
              "HEAPGATE_SAMPLE_SUITE=\"$<TARGET_FILE:sample_suite>\""
              "HEAPGATE_RECORD_LEAK=\"$<TARGET_FILE:record_leak>\""
              "HEAPGATE_RECORD_STATIC=\"$<TARGET_FILE:record_static>\""
              "HEAPGATE_RECORD_OWN_MALLOC=\"$<TARGET_FILE:record_own_malloc>\""
              "HEAPGATE_RECORD_ASAN=\"$<TARGET_FILE:record_asan>\""
              # BI-100 to BI-103 compile a face's header alone.
              "HEAPGATE_CXX_COMPILER=\"${CMAKE_CXX_COMPILER}\""
              "HEAPGATE_CATCH2_INCLUDE=\"${PROJECT_SOURCE_DIR}/catch2_plugin/include\""
              "HEAPGATE_DOCTEST_INCLUDE=\"${PROJECT_SOURCE_DIR}/doctest_plugin/include\"")
add_dependencies(bad_inputs_test heapgate_cli sample_suite heapgate_record record_leak record_static record_own_malloc
  record_asan)

# Rows and tests are one list: a row without its test, a test without its
# row, ids out of order or fewer than 40 rows fail.
add_test(NAME bad_inputs_catalogue
  COMMAND ${CMAKE_COMMAND} -DDOC=${PROJECT_SOURCE_DIR}/docs/bad-inputs.md
          -DTESTS=${CMAKE_CURRENT_SOURCE_DIR}/e2e/bad_inputs_test.cpp
          -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/bad_inputs_catalogue_check.cmake)
# The check itself, on a catalogue with a gap, too few rows, a test without a
# row and a row without a test: each is named, in that order.
add_test(NAME bad_inputs_catalogue_finds_mistakes
  COMMAND ${CMAKE_COMMAND} -DDOC=${CMAKE_CURRENT_SOURCE_DIR}/data/bad_inputs/broken_catalogue.md
          -DTESTS=${CMAKE_CURRENT_SOURCE_DIR}/data/bad_inputs/broken_tests.cpp
          -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/bad_inputs_catalogue_check.cmake)
set_tests_properties(bad_inputs_catalogue_finds_mistakes PROPERTIES PASS_REGULAR_EXPRESSION
  "row BI-03: out of order, expected BI-02.*has 2 rows, fewer than 40.*test BI04_Extra: no row BI-04.*row BI-03: no test")
set_tests_properties(bad_inputs_catalogue bad_inputs_catalogue_finds_mistakes PROPERTIES LABELS "bad_inputs")
# The fault table (docs/bad-inputs.md, "Faults") and tests/e2e/faults_test.cpp.
add_test(NAME faults_catalogue
  COMMAND ${CMAKE_COMMAND} -DDOC=${PROJECT_SOURCE_DIR}/docs/bad-inputs.md
          -DTESTS=${CMAKE_CURRENT_SOURCE_DIR}/e2e/faults_test.cpp -DPREFIX=F -DSUITE=Faults -DMIN_ROWS=12
          -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/bad_inputs_catalogue_check.cmake)
set_tests_properties(faults_catalogue PROPERTIES LABELS "bad_inputs;faults")
