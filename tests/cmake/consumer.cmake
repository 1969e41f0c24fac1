# SPDX-License-Identifier: MIT
# Shared by the consumer projects: the `consumer` and `gtest_consumer`
# executables, each with its test (`ctest --build-and-test` runs the project's
# own ctest), and the checks for an embedded (add_subdirectory or FetchContent)
# heapgate. The projects call enable_testing() first.

# heapgate_consumer_executable(): builds consumer.cpp against heapgate::core,
# with jemalloc linked by heapgate_link_jemalloc() (include(HeapgateHelpers)
# must have been done), and warnings as errors so heapgate's public headers
# stay warning-free in a consumer's build too.
function(heapgate_consumer_executable)
  add_executable(consumer ${CMAKE_CURRENT_LIST_DIR}/../consumer.cpp)
  target_compile_definitions(consumer PRIVATE HEAPGATE_EXPECTED_VERSION="${HEAPGATE_EXPECTED_VERSION}")
  target_compile_options(consumer PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Werror)
  target_link_libraries(consumer PRIVATE heapgate::core)
  heapgate_link_jemalloc(consumer)
  add_test(NAME consumer COMMAND consumer)
endfunction()

# heapgate_consumer_vendor_googletest(<googletest source dir>): what a project
# that vendors GoogleTest does, before it adds heapgate: builds googletest from
# source (Debian's libgtest-dev ships it in /usr/src/googletest), so the
# targets gtest and GTest::gtest (an ALIAS) exist. gmock is not needed.
function(heapgate_consumer_vendor_googletest source_dir)
  if(NOT EXISTS "${source_dir}/CMakeLists.txt")
    message(FATAL_ERROR "consumer: no googletest sources in ${source_dir}; fix: apt-get install libgtest-dev")
  endif()
  set(BUILD_GMOCK OFF)
  set(INSTALL_GTEST OFF)
  add_subdirectory("${source_dir}" "${CMAKE_BINARY_DIR}/googletest")
  get_target_property(aliased GTest::gtest ALIASED_TARGET)
  if(NOT aliased STREQUAL "gtest")
    message(FATAL_ERROR "consumer: vendored googletest defines no GTest::gtest alias of gtest")
  endif()
endfunction()

# heapgate_check_vendored_googletest(<heapgate source dir>): the embedded
# heapgate::gtest links the project's vendored `gtest` and looked for no other
# GoogleTest (no find_package(GTest) in its directory). A diagnosis at
# configure time; the link map check of gtest_consumer is the proof.
function(heapgate_check_vendored_googletest source_dir)
  get_property(imported DIRECTORY "${source_dir}/gtest_plugin" PROPERTY IMPORTED_TARGETS)
  list(FILTER imported INCLUDE REGEX "^GTest::")
  if(imported)
    message(FATAL_ERROR "consumer: heapgate found another GoogleTest (${imported}) instead of using the project's")
  endif()
  get_target_property(links heapgate_gtest LINK_LIBRARIES)
  set(uses_vendored OFF)
  foreach(link IN LISTS links)
    if(TARGET "${link}")
      get_target_property(aliased "${link}" ALIASED_TARGET)
      if(aliased STREQUAL "gtest" OR link STREQUAL "gtest")
        set(uses_vendored ON)
      endif()
    endif()
  endforeach()
  if(NOT uses_vendored)
    message(FATAL_ERROR "consumer: heapgate_gtest does not link the vendored gtest target: ${links}")
  endif()
endfunction()

# heapgate_gtest_consumer_executable(<gtest target>): builds gtest_consumer.cpp
# with heapgate::gtest_main alone (which brings jemalloc: the README's path),
# and its test: run it directly with a report
# and check the report and that the link holds exactly one GoogleTest, the
# library of <gtest target> (the project's own: vendored or found).
function(heapgate_gtest_consumer_executable gtest_target)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  add_executable(gtest_consumer ${dir}/gtest_consumer.cpp)
  target_compile_options(gtest_consumer PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Werror)
  target_link_libraries(gtest_consumer PRIVATE heapgate::gtest_main)
  # GNU ld's map: every input file of the link (gtest_consumer_check.cmake).
  set(map "${CMAKE_CURRENT_BINARY_DIR}/gtest_consumer.map")
  target_link_options(gtest_consumer PRIVATE "LINKER:-Map=${map}")
  # Relative paths in the map are from where the link ran: the top binary
  # directory for Ninja, the target's directory's for Makefiles; called from
  # the top directory, both are this one.
  if(NOT CMAKE_CURRENT_BINARY_DIR STREQUAL CMAKE_BINARY_DIR)
    message(FATAL_ERROR "consumer: call heapgate_gtest_consumer_executable() from the top directory")
  endif()
  add_test(NAME gtest_consumer COMMAND ${CMAKE_COMMAND}
    -DBINARY=$<TARGET_FILE:gtest_consumer>
    -DREPORT_DIR=${CMAKE_CURRENT_BINARY_DIR}/gtest_report
    -DLINK_MAP=${map}
    -DLINK_DIR=${CMAKE_CURRENT_BINARY_DIR}
    -DEXPECTED_GTEST=$<TARGET_LINKER_FILE:${gtest_target}>
    -P ${dir}/gtest_consumer_check.cmake)
endfunction()

# heapgate_framework_consumer_executables(): with the package's Catch2 and
# doctest faces (when it has them), a suite each on the drop-in main, built
# with the consumer, run strict with a report: exit 0 only when heapgate
# measured its test case within its budget.
function(heapgate_framework_consumer_executables)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  foreach(framework catch2 doctest)
    if(NOT TARGET heapgate::${framework}_main)
      continue()
    endif()
    add_executable(${framework}_consumer ${dir}/${framework}_consumer.cpp)
    target_compile_options(${framework}_consumer PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Werror)
    target_link_libraries(${framework}_consumer PRIVATE heapgate::${framework}_main)
    add_dependencies(consumer ${framework}_consumer)
    add_test(NAME ${framework}_consumer COMMAND ${framework}_consumer --heapgate_strict
      --heapgate_report=${CMAKE_CURRENT_BINARY_DIR}/${framework}_report)
  endforeach()
endfunction()

# Every non-imported target defined in `dir` and its subdirectories.
function(_heapgate_consumer_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _heapgate_consumer_targets("${subdir}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# heapgate_check_embedded(<heapgate source dir>): heapgate as a subproject adds
# no tests, benchmarks, examples, CLI, HTTP endpoints or install rules by default, and defines only
# targets named heapgate_* (plus the heapgate::* aliases), so it cannot collide
# with a parent's `core`, `warnings`, `gtest`...
function(heapgate_check_embedded source_dir)
  foreach(option HEAPGATE_BUILD_TESTS HEAPGATE_BUILD_BENCHMARK HEAPGATE_BUILD_EXAMPLES HEAPGATE_INSTALL
                 HEAPGATE_BUILD_RUNNER HEAPGATE_BUILD_HTTP)
    if(NOT DEFINED ${option})
      message(FATAL_ERROR "consumer: heapgate option ${option} is not defined")
    elseif(${option})
      message(FATAL_ERROR "consumer: ${option} is ${${option}} in a subproject; expected OFF")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${source_dir}" PROPERTY SUBDIRECTORIES)
  foreach(dir tests bench examples)
    if("${source_dir}/${dir}" IN_LIST subdirs)
      message(FATAL_ERROR "consumer: heapgate added ${dir}/ as a subproject")
    endif()
  endforeach()
  _heapgate_consumer_targets("${source_dir}" targets)
  if(NOT "heapgate_core" IN_LIST targets)
    message(FATAL_ERROR "consumer: heapgate_core not found among heapgate's targets (${targets})")
  endif()
  foreach(target IN LISTS targets)
    if(NOT target MATCHES "^heapgate_")
      message(FATAL_ERROR "consumer: heapgate defines a target with a bare name: ${target}")
    endif()
  endforeach()
  get_target_property(aliased heapgate::core ALIASED_TARGET)
  if(NOT aliased STREQUAL "heapgate_core")
    message(FATAL_ERROR "consumer: heapgate::core is not an alias of heapgate_core")
  endif()
  list(JOIN targets " " targets)
  message(STATUS "consumer: heapgate's targets: ${targets}")
endfunction()

# heapgate_consumer_readme_snippet(<name> <README path> <out var>): the README's
# ```cmake block after "<!-- snippet: <name>", written to this binary directory
# for include(); <out var> is its path. Its GIT_REPOSITORY and GIT_TAG lines
# become SOURCE_DIR "${HEAPGATE_SOURCE_DIR}" (nothing is downloaded), so what
# a user copies from the README is what this consumer builds. A missing
# block fails the configuration.
function(heapgate_consumer_readme_snippet name readme out)
  file(READ "${readme}" text)
  string(FIND "${text}" "<!-- snippet: ${name} " at)
  if(at EQUAL -1)
    message(FATAL_ERROR "consumer: ${readme} has no block marked <!-- snippet: ${name} ... -->")
  endif()
  string(SUBSTRING "${text}" ${at} -1 text)
  string(FIND "${text}" "```cmake\n" open)
  if(open EQUAL -1)
    message(FATAL_ERROR "consumer: no ```cmake block after the ${name} snippet marker in ${readme}")
  endif()
  math(EXPR open "${open} + 9")
  string(SUBSTRING "${text}" ${open} -1 text)
  string(FIND "${text}" "```" close)
  string(SUBSTRING "${text}" 0 ${close} block)
  string(REGEX REPLACE "GIT_REPOSITORY[^\n]*\n[ \t]*GIT_TAG[ \t]+[^ \t\n)]+"
    "SOURCE_DIR \"${HEAPGATE_SOURCE_DIR}\"" block "${block}")
  set(path "${CMAKE_CURRENT_BINARY_DIR}/readme_${name}.cmake")
  file(WRITE "${path}" "${block}")
  message(STATUS "consumer: README snippet ${name}:\n${block}")
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

# heapgate_consumer_readme_target(): `my_tests`, the target the README's
# snippets link, from gtest_consumer.cpp, built with gtest_consumer and run
# directly as the README says (readme_path_check.cmake): it measures
# (heapgate::gtest_main brings jemalloc) and catches a planted regression and leak.
function(heapgate_consumer_readme_target)
  add_executable(my_tests ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/gtest_consumer.cpp)
  add_test(NAME readme_my_tests COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:my_tests>
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/readme_path -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/readme_path_check.cmake)
endfunction()

# heapgate_strict_headers_check(<include dir>...): every public header
# (<dir>/heapgate/*.h), alone in a translation unit, compiled with a strict
# consumer's warnings as errors, with heapgate's include directories as
# ordinary ones (not SYSTEM: an installed package's would be, and would hide
# the warnings). Built with `consumer`.
function(heapgate_strict_headers_check)
  set(sources "")
  foreach(dir IN LISTS ARGN)
    file(GLOB headers RELATIVE "${dir}" "${dir}/heapgate/*.h")
    foreach(header IN LISTS headers)
      string(MAKE_C_IDENTIFIER "${header}" id)
      set(source "${CMAKE_CURRENT_BINARY_DIR}/strict_headers/${id}.cpp")
      file(CONFIGURE OUTPUT "${source}" CONTENT "#include <${header}>\n")
      list(APPEND sources "${source}")
    endforeach()
  endforeach()
  list(LENGTH sources count)
  if(count LESS 10)
    message(FATAL_ERROR "consumer: only ${count} public headers found in ${ARGN}")
  endif()
  add_library(strict_headers OBJECT ${sources})
  set_target_properties(strict_headers PROPERTIES NO_SYSTEM_FROM_IMPORTED ON)
  target_compile_options(strict_headers PRIVATE -Wall -Wextra -Wpedantic -Weffc++ -Wfloat-equal -Wshadow
    -Wconversion -Wold-style-cast -Werror)
  foreach(target heapgate::measure heapgate::analysis heapgate::gate heapgate::report heapgate::pprof
                 heapgate::http heapgate::gtest heapgate::benchmark heapgate::benchmark_gate)
    if(TARGET ${target})
      target_link_libraries(strict_headers PRIVATE ${target})
    endif()
  endforeach()
  add_dependencies(consumer strict_headers)
  message(STATUS "consumer: ${count} public headers checked alone with strict warnings")
endfunction()

# heapgate_own_main_consumer_executable(<gtest target>): the own-main() path.
# gtest_consumer.cpp with its own main() (init + install_listener), linked
# to heapgate::gtest with the plain target_link_libraries signature and
# nothing else: heapgate::gtest brings jemalloc itself, so the test measures
# as the drop-in main's does (gtest_consumer_check.cmake). Built with
# gtest_consumer.
function(heapgate_own_main_consumer_executable gtest_target)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  add_executable(own_main_consumer ${dir}/gtest_consumer.cpp)
  target_compile_definitions(own_main_consumer PRIVATE HEAPGATE_CONSUMER_OWN_MAIN)
  target_link_libraries(own_main_consumer heapgate::gtest)
  set(map "${CMAKE_CURRENT_BINARY_DIR}/own_main_consumer.map")
  target_link_options(own_main_consumer PRIVATE "LINKER:-Map=${map}")
  add_dependencies(gtest_consumer own_main_consumer)
  add_test(NAME own_main_consumer COMMAND ${CMAKE_COMMAND}
    -DBINARY=$<TARGET_FILE:own_main_consumer>
    -DREPORT_DIR=${CMAKE_CURRENT_BINARY_DIR}/own_main_report
    -DLINK_MAP=${map}
    -DLINK_DIR=${CMAKE_CURRENT_BINARY_DIR}
    -DEXPECTED_GTEST=$<TARGET_LINKER_FILE:${gtest_target}>
    -P ${dir}/gtest_consumer_check.cmake)
endfunction()

# heapgate_source_include_dirs(<heapgate source dir> <out var>): the public
# include directories of the embedded heapgate's libraries that this build has.
function(heapgate_source_include_dirs source_dir out)
  set(dirs "")
  file(GLOB libs RELATIVE "${source_dir}/lib" "${source_dir}/lib/*")
  foreach(lib IN LISTS libs)
    if(TARGET heapgate::${lib} AND IS_DIRECTORY "${source_dir}/lib/${lib}/include")
      list(APPEND dirs "${source_dir}/lib/${lib}/include")
    endif()
  endforeach()
  if(TARGET heapgate::harness)
    list(APPEND dirs "${source_dir}/harness/include")
  endif()
  if(TARGET heapgate::gtest)
    list(APPEND dirs "${source_dir}/gtest_plugin/include")
  endif()
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()
