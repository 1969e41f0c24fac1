# SPDX-License-Identifier: MIT
# heapgate's own flame graphs (SVG) and the HTML report: pure data, checked
# with a real XML parser, and the HTML page loaded in headless Chromium.
heapgate_add_test(flamegraph_test SOURCES unit/flamegraph_test.cpp LABELS report
  LIBRARIES pugixml::pugixml)

# A missing Chromium fails the test (it does not skip): scripts/setup.sh
# installs it. HEAPGATE_CHROMIUM in the environment overrides the path.
find_program(HEAPGATE_CHROMIUM NAMES chromium chromium-browser)
if(HEAPGATE_CHROMIUM)
  set(_chromium "${HEAPGATE_CHROMIUM}")
else()
  set(_chromium "/usr/bin/chromium")
endif()
heapgate_add_test(report_html_test SOURCES unit/report_html_test.cpp LABELS report
  LIBRARIES pugixml::pugixml
  DEFINITIONS "HEAPGATE_CHROMIUM=\"${_chromium}\""
    HEAPGATE_APPROVED_DIR="${CMAKE_CURRENT_SOURCE_DIR}/approved"
    # Screenshots and the page they show, kept for CI to upload.
    HEAPGATE_ARTIFACT_DIR="${CMAKE_CURRENT_BINARY_DIR}/report_html_artifacts")
unset(_chromium)
