# SPDX-License-Identifier: MIT
# pprof export (heapgate::pprof, HEAPGATE_PPROF): files read back with the
# protobuf library, from profiles of the heap_workload child program, and the
# CLI verbs that write them. Label `pprof`.
if(NOT HEAPGATE_PPROF OR NOT TARGET heapgate_cli)
  return()
endif()
heapgate_add_test(pprof_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/pprof_test.cpp
  LIBRARIES heapgate::pprof protobuf::libprotobuf ZLIB::ZLIB
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\""
  LABELS pprof runner)
# The generated profile.pb.h: the test reads files back with the same classes.
target_include_directories(pprof_test PRIVATE ${CMAKE_BINARY_DIR}/lib/pprof/generated
  ${CMAKE_CURRENT_SOURCE_DIR}/helpers/symbols)
add_dependencies(pprof_test heapgate_cli heap_workload)
