# SPDX-License-Identifier: MIT
# `heapgate fetch` end to end: the built CLI against heapgate::HttpServer in the
# test process (every allocation profiled, runs of ~1 s) and against scripted
# cpp-httplib servers for 500s, silence, Mesos' 400s and 409.
if(NOT TARGET heapgate_cli OR NOT TARGET heapgate::http)
  return()
endif()
heapgate_add_test(fetch_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES e2e/fetch_test.cpp
  LIBRARIES heapgate::http heapgate::httplib nlohmann_json::nlohmann_json
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\""
  LABELS e2e runner)
add_dependencies(fetch_test heapgate_cli)
# The server's jeprof names this binary's frames in `--format text`.
target_compile_options(fetch_test PRIVATE -fno-omit-frame-pointer)
