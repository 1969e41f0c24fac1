# SPDX-License-Identifier: MIT
# Baselines, verdicts and reports: pure data, no jemalloc needed.
set(HEAPGATE_REPORT_TEST_DEFINITIONS
  HEAPGATE_APPROVED_DIR="${CMAKE_CURRENT_SOURCE_DIR}/approved"
  HEAPGATE_JUNIT_XSD="${CMAKE_CURRENT_SOURCE_DIR}/data/junit/junit-10.xsd")

heapgate_add_test(baseline_test SOURCES unit/baseline_test.cpp LABELS report
  DEFINITIONS ${HEAPGATE_REPORT_TEST_DEFINITIONS})
heapgate_add_test(verdict_test GATED SOURCES unit/verdict_test.cpp LABELS report)
heapgate_add_test(gate_test SOURCES unit/gate_test.cpp LABELS report)
# The one baseline writer: every path against every refusal.
heapgate_add_test(baseline_merge_test SOURCES unit/baseline_merge_test.cpp LABELS report)
# Set HEAPGATE_APPROVE=1 to rewrite tests/approved/ from the current output.
heapgate_add_test(report_test SOURCES unit/report_test.cpp LABELS report LIBRARIES pugixml::pugixml
  DEFINITIONS ${HEAPGATE_REPORT_TEST_DEFINITIONS})
heapgate_add_test(report_writer_test SOURCES unit/report_writer_test.cpp LABELS report)
heapgate_add_test(sampling_tolerance_test SOURCES unit/sampling_tolerance_test.cpp LABELS report)
