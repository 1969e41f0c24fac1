# SPDX-License-Identifier: MIT
# scripts/bench_anchors.sh --check, label `bench`: the anchors' script runs
# every row whose tool is on this machine once on a tiny workload (2,000 map
# entries) and fails if one of them produced no numbers, or if heapgate's
# counters or exact row did not count exactly the workload's 4,000
# allocations. Nothing is timed; rows for tools CI lacks (heaptrack,
# valgrind) print "missing" and do not fail it. ~15 s on a loaded 2-core VM.
if(TARGET bench_anchors)
  add_test(NAME bench_anchors.check
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/bench_anchors.sh --check --bin-dir $<TARGET_FILE_DIR:anchor_workload>)
  set_tests_properties(bench_anchors.check PROPERTIES LABELS bench TIMEOUT 120
    ENVIRONMENT "HEAPGATE_BENCH_REPEAT=1;HEAPGATE_ANCHOR_ENTRIES=2000")
endif()
