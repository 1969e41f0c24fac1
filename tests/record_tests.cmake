# SPDX-License-Identifier: MIT
# `heapgate record` end to end (docs/design.md §12): the real `heapgate`
# executable records small programs of tests/record/ that know nothing of
# heapgate (a leak, a spike freed before exit, a fork, threads, SIGTERM,
# growth over time), and the tests check the numbers exactly. Label `record`.
if(NOT TARGET heapgate_cli)
  return()
endif()
set(_record_programs record_leak record_spike record_fork record_threads record_sigterm record_growth)
foreach(program IN LISTS _record_programs)
  add_executable(${program} record/${program}.cpp)
  target_link_libraries(${program} PRIVATE Threads::Threads)
  # Frames and lines of the programs' own functions, as a developer's debug build has them.
  target_compile_options(${program} PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline)
endforeach()
# The same leak in a program that links jemalloc itself.
add_executable(record_leak_jemalloc record/record_leak.cpp)
target_compile_options(record_leak_jemalloc PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline)
heapgate_link_jemalloc(record_leak_jemalloc)

# Programs heapgate record refuses (docs/bad-inputs.md, tests/e2e/bad_inputs_test.cpp).
add_executable(record_static record/record_static.cpp)
target_link_options(record_static PRIVATE -static)
add_executable(record_own_malloc record/record_own_malloc.cpp)
add_executable(record_asan record/record_leak.cpp)
target_compile_options(record_asan PRIVATE -fsanitize=address)
target_link_options(record_asan PRIVATE -fsanitize=address)

heapgate_add_test(record_test SOURCES record/record_test.cpp LABELS e2e record
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
add_dependencies(record_test heapgate_cli heapgate_record ${_record_programs} record_leak_jemalloc)
