# SPDX-License-Identifier: MIT
# cmake -DSOURCE_DIR=... -DCLANG_FORMAT=... -P format_check.cmake
# The tree follows .clang-format: every C++ source and header of heapgate's
# own (not tests/data, not a build directory) is as clang-format would write
# it. A failure names the files; fix: clang-format -i <file>.
cmake_minimum_required(VERSION 3.21)
foreach(var SOURCE_DIR CLANG_FORMAT)
  if(NOT ${var})
    message(FATAL_ERROR "format_check.cmake: ${var} is required")
  endif()
endforeach()
set(files "")
foreach(dir lib harness gtest_plugin catch2_plugin doctest_plugin runner tests bench examples)
  file(GLOB_RECURSE found "${SOURCE_DIR}/${dir}/*.cpp" "${SOURCE_DIR}/${dir}/*.h")
  list(APPEND files ${found})
endforeach()
list(FILTER files EXCLUDE REGEX "/tests/data/")
list(LENGTH files count)
if(count LESS 100)
  message(FATAL_ERROR "format_check: only ${count} sources found under ${SOURCE_DIR}")
endif()
execute_process(COMMAND "${CLANG_FORMAT}" --style=file --dry-run --Werror ${files}
  WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE result ERROR_VARIABLE diagnostics)
if(NOT result EQUAL 0)
  string(REGEX MATCHALL "[^\n]*: error: code should be clang-formatted" lines "${diagnostics}")
  set(bad "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ":[0-9]+:[0-9]+: error: code should be clang-formatted" "" file "${line}")
    list(APPEND bad "${file}")
  endforeach()
  list(REMOVE_DUPLICATES bad)
  list(JOIN bad "\n  " bad)
  message(FATAL_ERROR "format_check: not formatted as .clang-format says:\n  ${bad}\n"
                      "fix: clang-format -i on each (or on the whole tree: git ls-files '*.cpp' '*.h' | xargs clang-format -i)")
endif()
message(STATUS "format_check: ${count} sources follow .clang-format")
