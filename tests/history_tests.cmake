# SPDX-License-Identifier: MIT
# heapgate history (lib/history/, runner/src/cmd_history.cpp): change points
# as a pure function, the SQLite store in a real file, the PostgreSQL store on
# a real server (initdb + pg_ctl into a temporary directory, one server per
# test binary), the trend pages in headless Chromium, and the bad inputs of
# docs/bad-inputs.md's history table. Label `history` (PostgreSQL ones also
# `postgresql`): ctest --test-dir build -L history.
if(NOT TARGET heapgate_history OR NOT TARGET heapgate_cli)
  return()
endif()
# The tests read the stores with the same libraries, to check what heapgate wrote.
find_package(SQLite3 REQUIRED)
set(_history_cli "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")

heapgate_add_test(change_points_test SOURCES history/change_points_test.cpp LIBRARIES heapgate::history
  LABELS history)

# e2e: these run the real heapgate (and Chromium), so not in the quick `unit` label.
heapgate_add_test(history_sqlite_test SOURCES history/history_sqlite_test.cpp
  LIBRARIES heapgate::history SQLite::SQLite3
  DEFINITIONS ${_history_cli} "HEAPGATE_SAMPLE_SUITE=\"$<TARGET_FILE:sample_suite>\""
  LABELS history e2e)
add_dependencies(history_sqlite_test heapgate_cli sample_suite)

# Chromium, as the HTML report's test finds it (flamegraph_tests.cmake).
if(HEAPGATE_CHROMIUM)
  set(_history_chromium "${HEAPGATE_CHROMIUM}")
else()
  set(_history_chromium "/usr/bin/chromium")
endif()
heapgate_add_test(history_pages_test SOURCES history/history_pages_test.cpp
  LIBRARIES heapgate::history
  DEFINITIONS ${_history_cli} "HEAPGATE_CHROMIUM=\"${_history_chromium}\""
  LABELS history e2e)
add_dependencies(history_pages_test heapgate_cli)

# The binaries that need a PostgreSQL server run whole, as one ctest entry
# each, so that one server serves all their tests (a discovered entry per
# test would start one per test).
# Without libpq the PostgreSQL store is not built, and neither are its tests.
# A missing server fails them (it does not skip them), as a missing Chromium
# does: scripts/setup.sh installs postgresql.
find_package(PostgreSQL QUIET)
if(NOT PostgreSQL_FOUND)
  message(STATUS "heapgate: heapgate::history is built without PostgreSQL: its tests are not added")
  unset(_history_cli)
  unset(_history_chromium)
  return()
endif()
find_program(HEAPGATE_INITDB initdb PATHS /usr/lib/postgresql/17/bin /usr/lib/postgresql/16/bin
  /usr/lib/postgresql/15/bin NO_DEFAULT_PATH)
find_program(HEAPGATE_INITDB initdb)
if(HEAPGATE_INITDB)
  get_filename_component(_history_pg_bin "${HEAPGATE_INITDB}" DIRECTORY)
else()
  set(_history_pg_bin /usr/lib/postgresql/15/bin)
endif()
function(heapgate_history_server_test name)
  add_executable(${name} history/${name}.cpp history/postgres_server.cpp)
  target_link_libraries(${name} PRIVATE heapgate_test_support GTest::gtest_main heapgate_warnings heapgate::history
    SQLite::SQLite3 PostgreSQL::PostgreSQL)
  target_compile_options(${name} PRIVATE ${HEAPGATE_TEST_CODE_FLAGS})
  target_compile_definitions(${name} PRIVATE ${_history_cli} "HEAPGATE_POSTGRES_BIN=\"${_history_pg_bin}\"")
  add_dependencies(${name} heapgate_cli)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "history;postgresql" TIMEOUT 300)
endfunction()
heapgate_history_server_test(history_postgres_test)
heapgate_history_server_test(history_bad_inputs_test)

# The history table of docs/bad-inputs.md and its tests are one list.
add_test(NAME history_bad_inputs_catalogue
  COMMAND ${CMAKE_COMMAND} -DDOC=${PROJECT_SOURCE_DIR}/docs/bad-inputs.md
          -DTESTS=${CMAKE_CURRENT_SOURCE_DIR}/history/history_bad_inputs_test.cpp -DPREFIX=H -DSUITE=HistoryBadInputs
          -DMIN_ROWS=14 -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/bad_inputs_catalogue_check.cmake)
set_tests_properties(history_bad_inputs_catalogue PROPERTIES LABELS "history;bad_inputs")

unset(_history_pg_bin)
unset(_history_cli)
unset(_history_chromium)
