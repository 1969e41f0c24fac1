# SPDX-License-Identifier: MIT
# cmake -DBUILD_DIR=... -DOUT=... -P package_deb.cmake
# The consumer-deb fixture: `cpack -G DEB` in BUILD_DIR (the README's way to
# put heapgate on a CI image), then checks the package as dpkg sees it — its
# name, its Depends resolvable by apt on this machine (simulated, nothing is
# installed), the CLI in usr/bin — and unpacks it into OUT/root, where the
# find_package consumer then builds against OUT/root/usr.
cmake_minimum_required(VERSION 3.21)
foreach(var BUILD_DIR OUT)
  if(NOT ${var})
    message(FATAL_ERROR "package_deb.cmake: ${var} is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND cpack -G DEB -B "${OUT}" --config "${BUILD_DIR}/CPackConfig.cmake"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed (${result}):\n${output}")
endif()
file(GLOB debs "${OUT}/heapgate_*.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one heapgate_*.deb in ${OUT}, found: ${debs}")
endif()

execute_process(COMMAND dpkg-deb -f "${debs}" Package Depends OUTPUT_VARIABLE fields RESULT_VARIABLE result)
if(NOT result EQUAL 0 OR NOT fields MATCHES "Package: heapgate" OR NOT fields MATCHES "libjemalloc-dev")
  message(FATAL_ERROR "unexpected control fields of ${debs}:\n${fields}")
endif()
message(STATUS "${fields}")

# Every dependency names a package apt knows and can install here.
find_program(APT_GET apt-get)
if(APT_GET)
  execute_process(COMMAND "${APT_GET}" install --simulate --no-install-recommends "${debs}"
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "apt-get install --simulate ${debs} failed:\n${output}")
  endif()
endif()

execute_process(COMMAND dpkg-deb -x "${debs}" "${OUT}/root" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -x ${debs} failed")
endif()
foreach(path usr/bin/heapgate usr/include/heapgate/gate.h usr/lib/cmake/heapgate/heapgateConfig.cmake)
  if(NOT EXISTS "${OUT}/root/${path}")
    message(FATAL_ERROR "the package lacks /${path}")
  endif()
endforeach()
execute_process(COMMAND "${OUT}/root/usr/bin/heapgate" --version RESULT_VARIABLE result OUTPUT_VARIABLE version)
if(NOT result EQUAL 0 OR NOT version MATCHES "[0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "the packaged heapgate --version failed (${result}): ${version}")
endif()
