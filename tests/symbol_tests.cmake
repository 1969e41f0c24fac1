# SPDX-License-Identifier: MIT
# Symbolizer, normalization and symbolic diff, on real jemalloc dumps of real binaries.

# Test code keeps its frames: no tail calls, so a function that ends in malloc
# still shows in the stack.
set(HEAPGATE_SYMBOL_TEST_FLAGS -g -fno-omit-frame-pointer -fno-optimize-sibling-calls)

# A shared library loaded by linking: its frames must be named through its own file.
add_library(heapgate_symbols_lib SHARED helpers/symbols/symbols_lib.cpp)
target_include_directories(heapgate_symbols_lib PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/helpers/symbols)
target_compile_options(heapgate_symbols_lib PRIVATE ${HEAPGATE_SYMBOL_TEST_FLAGS} -O2)
target_link_libraries(heapgate_symbols_lib PRIVATE heapgate_warnings)
# gtest_discover_tests runs the test binary from the build tree: keep the RPATH.
set_target_properties(heapgate_symbols_lib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# A non-PIE (ET_EXEC) child program that dumps a profile.
add_executable(symbols_nopie helpers/symbols/nopie_dump.cpp)
set_target_properties(symbols_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
target_compile_options(symbols_nopie PRIVATE ${HEAPGATE_SYMBOL_TEST_FLAGS} -O1 -fno-pie)
target_link_options(symbols_nopie PRIVATE -no-pie)
target_link_libraries(symbols_nopie PRIVATE heapgate::core heapgate_warnings)
heapgate_link_jemalloc(symbols_nopie)

heapgate_add_test(symbolizer_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/symbolizer_test.cpp
  LIBRARIES heapgate_symbols_lib)
heapgate_add_test(normalize_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/normalize_test.cpp)
heapgate_add_test(diff_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/diff_test.cpp)
foreach(t symbolizer_test normalize_test diff_test)
  target_compile_options(${t} PRIVATE ${HEAPGATE_SYMBOL_TEST_FLAGS})
  target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/helpers/symbols)
endforeach()
add_dependencies(symbolizer_test symbols_nopie heap_workload)
add_dependencies(diff_test heap_workload)
