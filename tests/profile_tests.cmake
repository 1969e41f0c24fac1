# SPDX-License-Identifier: MIT
# Profiles: the heap_v2 parser and writer, the jeprof driver, and rebasing a
# profile from one process onto another's address-space layout.

# Fixtures, the malformed corpus and a fuzz loop; no jemalloc needed.
heapgate_add_test(profile_parser_test SOURCES unit/profile_parser_test.cpp LABELS profile)

# Round trip of dumps this test process makes itself (exact mode, several threads).
heapgate_add_test(profile_roundtrip_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/profile_roundtrip_test.cpp LABELS profile)

# Real jeprof on dumps of the heap_workload child program. jemalloc is linked
# so HEAPGATE_REQUIRE_PROFILING can tell whether this jemalloc profiles at all.
heapgate_add_test(jeprof_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/jeprof_test.cpp LABELS profile jeprof)
heapgate_add_test(rebase_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/rebase_test.cpp LABELS profile jeprof)

# jeprof without Graphviz: PATH is a directory holding only what jeprof needs
# (perl, jeprof, binutils), so `dot` is missing for real rather than by a flag.
set(HEAPGATE_PATH_WITHOUT_DOT "${CMAKE_CURRENT_BINARY_DIR}/path-without-dot")
file(REMOVE_RECURSE "${HEAPGATE_PATH_WITHOUT_DOT}")
file(MAKE_DIRECTORY "${HEAPGATE_PATH_WITHOUT_DOT}")
foreach(tool perl jeprof nm objdump addr2line c++filt)
  find_program(HEAPGATE_TOOL_${tool} ${tool})
  if(HEAPGATE_TOOL_${tool})
    file(CREATE_LINK "${HEAPGATE_TOOL_${tool}}" "${HEAPGATE_PATH_WITHOUT_DOT}/${tool}" SYMBOLIC)
  endif()
endforeach()
heapgate_add_test(jeprof_nodot_test
  SOURCES unit/jeprof_nodot_test.cpp LABELS profile jeprof
  ENVIRONMENT "PATH=${HEAPGATE_PATH_WITHOUT_DOT}")

# The child program must exist before these tests run.
foreach(t jeprof_test rebase_test jeprof_nodot_test)
  add_dependencies(${t} heap_workload)
endforeach()

# heapgate's symbolic diff agrees with jeprof --base on the rebased profile.
heapgate_add_test(diff_agreement_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/diff_agreement_test.cpp LABELS profile jeprof)
add_dependencies(diff_agreement_test heap_workload)
