# SPDX-License-Identifier: MIT
# The CI templates (ci/templates) as users paste them, label `consumer`:
#   consumer-ci-templates-packages  each template's HEAPGATE_PACKAGES holds every package
#                                   `scripts/setup.sh --print-packages` prints, so the lists cannot drift
#   consumer-ci-templates           each template's shell steps, extracted from its YAML or Jenkinsfile,
#                                   run against tests/cmake/ci_consumer (FetchContent, as the README
#                                   recommends): baselines recorded (exit 0), an unchanged run passes
#                                   (exit 0) twice, with a threaded test whose counts vary with timing,
#                                   and a planted regression fails the gate (exit 1) with its
#                                   JUnit failure and HTML page
# tests/cmake/ci_consumer/run_ci_templates.py says what it substitutes and why.
# The templates share one consumer build (their build steps are the same) and
# a compiler cache kept in this build directory, as CI's cache would be.
find_package(Python3 COMPONENTS Interpreter)
set(_heapgate_ci_yaml OFF)
if(Python3_Interpreter_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import yaml" RESULT_VARIABLE _heapgate_ci_no_yaml
    OUTPUT_QUIET ERROR_QUIET)
  if(_heapgate_ci_no_yaml EQUAL 0)
    set(_heapgate_ci_yaml ON)
  endif()
endif()
if(NOT _heapgate_ci_yaml)
  message(FATAL_ERROR "heapgate tests: python3 with PyYAML not found (the CI-templates test reads the templates); "
    "fix: apt-get install python3-yaml (scripts/setup.sh)")
endif()

set(_heapgate_ci_script ${CMAKE_CURRENT_SOURCE_DIR}/cmake/ci_consumer/run_ci_templates.py)
add_test(NAME consumer-ci-templates-packages
  COMMAND ${Python3_EXECUTABLE} ${_heapgate_ci_script} packages --source ${PROJECT_SOURCE_DIR})
set_tests_properties(consumer-ci-templates-packages PROPERTIES LABELS consumer)

add_test(NAME consumer-ci-templates
  COMMAND ${Python3_EXECUTABLE} ${_heapgate_ci_script} run --source ${PROJECT_SOURCE_DIR}
    --work ${CMAKE_CURRENT_BINARY_DIR}/ci-templates/work
    --ccache ${CMAKE_CURRENT_BINARY_DIR}/ci-templates/ccache)
# It builds heapgate as the consumer's subproject on every core: give it the
# machine. With a warm compiler cache it takes ~3 min (about 1 min of CPU);
# with a cold one the consumer's RelWithDebInfo build of heapgate adds ~8 min
# of CPU, which on a loaded 2-core machine is more than 15 min of wall time.
set_tests_properties(consumer-ci-templates PROPERTIES LABELS "consumer;long" RUN_SERIAL ON TIMEOUT 2400)
unset(_heapgate_ci_script)
unset(_heapgate_ci_yaml)
unset(_heapgate_ci_no_yaml)
