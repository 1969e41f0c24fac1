# SPDX-License-Identifier: MIT
# Consumer tests (fmt's tests/cmake): small projects in tests/cmake/ that use
# heapgate::core and, when this build has it, heapgate::gtest_main the three
# documented ways, each configured, built and tested (the project's own ctest)
# by `ctest --build-and-test`. Label `consumer`; `ctest -L consumer` runs them.
#   consumer-add-subdirectory  add_subdirectory(<source dir>), next to a parent's `core` and `warnings` targets
#                              and its vendored GoogleTest (add_subdirectory(/usr/src/googletest))
#   consumer-fetchcontent      FetchContent_Declare(SOURCE_DIR <source dir>) + FetchContent_MakeAvailable,
#                              after vendoring GoogleTest the same way
#   consumer-find-package      find_package(heapgate CONFIG) against a prefix the consumer-install fixture fills;
#                              GoogleTest is the system's, through the config's find_dependency(GTest)
#   consumer-build-tree        find_package(heapgate CONFIG) with heapgate_DIR = this build directory
#   consumer-deb               find_package(heapgate CONFIG) in the unpacked `cpack -G DEB` package
# Each builds `consumer` (consumer.cpp, heapgate::core) and `gtest_consumer`
# (gtest_consumer.cpp, heapgate::gtest_main), whose test checks its report and
# that exactly one GoogleTest, the project's own, is in its link; the
# FetchContent and find_package consumers also build `my_tests` with the
# README's snippet for that path and run it as the README says.
set(HEAPGATE_CONSUMER_SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/cmake)
set(HEAPGATE_CONSUMER_BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/consumers)
set(HEAPGATE_CONSUMER_PREFIX ${HEAPGATE_CONSUMER_BINARY_DIR}/prefix)

# Every run starts from empty build directories (hence --build-noclean): a
# consumer's stale cache (e.g. an option cached OFF) must not hide a changed default.
add_test(NAME consumer-clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${HEAPGATE_CONSUMER_BINARY_DIR})
set_tests_properties(consumer-clean PROPERTIES FIXTURES_SETUP heapgate_consumer_clean LABELS "consumer;long")

# `ctest --build-and-test` runs make without -j and clears MAKEFLAGS, so a
# consumer that compiles heapgate_core itself uses Ninja, parallel by default,
# when it is installed.
find_program(HEAPGATE_CONSUMER_NINJA NAMES ninja ninja-build)
mark_as_advanced(HEAPGATE_CONSUMER_NINJA)

# The GoogleTest plugin is tested when it is built. The embedding consumers
# vendor GoogleTest from its sources, which Debian's libgtest-dev (the package
# heapgate::gtest needs anyway) ships in /usr/src/googletest.
set(HEAPGATE_CONSUMER_GTEST OFF)
if(TARGET heapgate::gtest_main)
  set(HEAPGATE_CONSUMER_GTEST ON)
endif()
set(HEAPGATE_CONSUMER_GOOGLETEST_DIR /usr/src/googletest CACHE PATH
  "GoogleTest sources the add_subdirectory and FetchContent consumer tests vendor")
mark_as_advanced(HEAPGATE_CONSUMER_GOOGLETEST_DIR)

# heapgate_add_consumer_test(<name> <project dir> [EMBEDS_HEAPGATE] [FIXTURES ...] [OPTIONS -D...])
# A consumer that embeds heapgate builds heapgate_core too; it does so without
# optimisation or debug info (an empty CMAKE_BUILD_TYPE), which compiles fastest,
# since it tests the CMake wiring and not code generation. The package
# consumers use this build's type, so the imported configuration matches.
function(heapgate_add_consumer_test name project)
  cmake_parse_arguments(C "EMBEDS_HEAPGATE" "" "FIXTURES;OPTIONS" ${ARGN})
  set(build_type_args "")
  set(build_type "${CMAKE_BUILD_TYPE}")
  set(generator "${CMAKE_GENERATOR}")
  set(make_program "${CMAKE_MAKE_PROGRAM}")
  if(C_EMBEDS_HEAPGATE)
    set(build_type "")
    if(HEAPGATE_CONSUMER_NINJA)
      set(generator Ninja)
      set(make_program "${HEAPGATE_CONSUMER_NINJA}")
    endif()
  endif()
  set(test_config_args "")
  if(CMAKE_CONFIGURATION_TYPES AND generator STREQUAL CMAKE_GENERATOR)
    set(build_type_args --build-config $<CONFIG>)
    set(test_config_args -C $<CONFIG>)
  endif()
  # Only the consumers' own targets are built (with their dependencies).
  set(target_args --build-target consumer)
  if(HEAPGATE_CONSUMER_GTEST)
    list(APPEND target_args --build-target gtest_consumer)
  endif()
  set(binary_dir ${HEAPGATE_CONSUMER_BINARY_DIR}/${name})
  add_test(NAME ${name} COMMAND ${CMAKE_CTEST_COMMAND}
    --build-and-test ${HEAPGATE_CONSUMER_SOURCE_DIR}/${project} ${binary_dir}
    --build-generator ${generator}
    --build-makeprogram ${make_program}
    --build-noclean
    ${target_args}
    ${build_type_args}
    --build-options
      -DCMAKE_BUILD_TYPE=${build_type}
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DHEAPGATE_EXPECTED_VERSION=${PROJECT_VERSION}
      -DHEAPGATE_CONSUMER_GTEST=${HEAPGATE_CONSUMER_GTEST}
      ${C_OPTIONS}
    --test-command ${CMAKE_CTEST_COMMAND} --test-dir ${binary_dir} ${test_config_args}
      --output-on-failure --no-tests=error)
  set_tests_properties(${name} PROPERTIES
    LABELS "consumer;long"
    FIXTURES_REQUIRED "heapgate_consumer_clean;${C_FIXTURES}"
    TIMEOUT 300)
  if(C_EMBEDS_HEAPGATE)
    # It compiles heapgate_core on every core: give it the machine.
    set_tests_properties(${name} PROPERTIES RUN_SERIAL ON)
  endif()
endfunction()

# An embedded heapgate builds the plugin only when this build does (without
# it, GoogleTest may be missing altogether).
set(_heapgate_embed_options -DHEAPGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR} -DHEAPGATE_WERROR=${HEAPGATE_WERROR}
  -DHEAPGATE_BUILD_GTEST=${HEAPGATE_CONSUMER_GTEST} -DGOOGLETEST_SOURCE_DIR=${HEAPGATE_CONSUMER_GOOGLETEST_DIR})
heapgate_add_consumer_test(consumer-add-subdirectory add_subdirectory EMBEDS_HEAPGATE
  OPTIONS ${_heapgate_embed_options})
heapgate_add_consumer_test(consumer-fetchcontent fetchcontent EMBEDS_HEAPGATE
  OPTIONS ${_heapgate_embed_options})

# The package consumers need heapgate's install and export rules.
if(HEAPGATE_INSTALL)
  set(_heapgate_config_arg "")
  if(CMAKE_CONFIGURATION_TYPES)
    set(_heapgate_config_arg -DCONFIG=$<CONFIG>)
  endif()
  add_test(NAME consumer-install COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR} -DPREFIX=${HEAPGATE_CONSUMER_PREFIX} ${_heapgate_config_arg}
    -DEXPECT_GTEST=${HEAPGATE_CONSUMER_GTEST}
    -P ${HEAPGATE_CONSUMER_SOURCE_DIR}/install_prefix.cmake)
  set_tests_properties(consumer-install PROPERTIES
    LABELS "consumer;long"
    FIXTURES_SETUP heapgate_installed
    FIXTURES_REQUIRED heapgate_consumer_clean)
  heapgate_add_consumer_test(consumer-find-package find_package
    FIXTURES heapgate_installed
    OPTIONS -DCMAKE_PREFIX_PATH=${HEAPGATE_CONSUMER_PREFIX} -DHEAPGATE_EXPECTED_ROOT=${HEAPGATE_CONSUMER_PREFIX}
      -DHEAPGATE_EXPECT_INSTALLED_HEADERS=ON -DHEAPGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR})
  # The .deb (cmake/HeapgatePackage.cmake), unpacked: what `apt install ./heapgate_*.deb` puts in /usr.
  add_test(NAME consumer-deb-package COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR} -DOUT=${HEAPGATE_CONSUMER_BINARY_DIR}/deb
    -P ${HEAPGATE_CONSUMER_SOURCE_DIR}/package_deb.cmake)
  set_tests_properties(consumer-deb-package PROPERTIES
    LABELS "consumer;long"
    FIXTURES_SETUP heapgate_deb
    FIXTURES_REQUIRED heapgate_consumer_clean
    TIMEOUT 300)
  heapgate_add_consumer_test(consumer-deb find_package
    FIXTURES heapgate_deb
    OPTIONS -DCMAKE_PREFIX_PATH=${HEAPGATE_CONSUMER_BINARY_DIR}/deb/root/usr
      -DHEAPGATE_EXPECTED_ROOT=${HEAPGATE_CONSUMER_BINARY_DIR}/deb/root/usr
      -DHEAPGATE_EXPECT_INSTALLED_HEADERS=ON -DHEAPGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR})
  heapgate_add_consumer_test(consumer-build-tree find_package
    OPTIONS -Dheapgate_DIR=${PROJECT_BINARY_DIR} -DHEAPGATE_EXPECTED_ROOT=${PROJECT_BINARY_DIR}
      -DHEAPGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR})
endif()
