# SPDX-License-Identifier: MIT
# `heapgate diff` at scale: the lean path (diff_profile_files, read_profile_records)
# against the model path, on real dumps of many distinct stacks and on the fixtures.

# bench/profile_gen.cpp as a test helper (the bench target is optional), with
# the same flags, so every level of its descent keeps a frame.
add_executable(many_stacks_profile ${PROJECT_SOURCE_DIR}/bench/profile_gen.cpp)
target_compile_options(many_stacks_profile PRIVATE -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls)
target_link_libraries(many_stacks_profile PRIVATE heapgate::core heapgate_warnings)
heapgate_link_jemalloc(many_stacks_profile)

heapgate_add_test(diff_files_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/diff_files_test.cpp LABELS analysis diffscale)
add_dependencies(diff_files_test many_stacks_profile)
target_include_directories(diff_files_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/helpers/symbols)
