# SPDX-License-Identifier: MIT
# heapgate::http: the Mesos-compatible memory-profiler endpoints over real HTTP
# on loopback (free ports, so they run in parallel). Label `http`.
if(NOT TARGET heapgate::http)
  return()
endif()

set(_http_libraries heapgate::http heapgate::httplib nlohmann_json::nlohmann_json)
# Every endpoint, with profiling of every allocation.
heapgate_add_test(http_profiler_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/http_profiler_test.cpp
  LIBRARIES ${_http_libraries}
  LABELS http)
# Keep this binary's frames named in jeprof's output.
target_compile_options(http_profiler_test PRIVATE -fno-omit-frame-pointer)
# heapgate::http::ProfilerClient against the server, and the protocol header.
heapgate_add_test(http_client_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/http_client_test.cpp
  LIBRARIES ${_http_libraries}
  LABELS http)
# The HTTP front end's bounds: slow clients, request sizes, methods, error bodies.
heapgate_add_test(http_hardening_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/http_hardening_test.cpp
  LIBRARIES ${_http_libraries}
  LABELS http)
# jemalloc without prof:true: Mesos' "profiling couldn't be enabled".
heapgate_add_test(http_no_profiling_test JEMALLOC
  SOURCES integration/http_no_profiling_test.cpp
  LIBRARIES ${_http_libraries}
  LABELS http)
# No jemalloc at all: Mesos' "not detected", no crash.
heapgate_add_test(http_no_jemalloc_test
  SOURCES integration/http_no_jemalloc_test.cpp
  LIBRARIES ${_http_libraries}
  LABELS http)
# The Mesos page's curl/wget script against examples/http_service.
if(TARGET http_service)
  heapgate_add_test(http_script_test
    SOURCES integration/http_script_test.cpp
    DEFINITIONS HEAPGATE_HTTP_SERVICE="$<TARGET_FILE:http_service>"
                HEAPGATE_MESOS_SCRIPT="${PROJECT_SOURCE_DIR}/examples/http_service/mesos_script.sh"
    LABELS http)
  add_dependencies(http_script_test http_service)
endif()
unset(_http_libraries)
# The downloads' content: jeprof text without allocator frames, plain file
# names, the run as pprof (the generated profile.pb.h reads it back).
heapgate_add_test(http_downloads_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/http_downloads_test.cpp
  LIBRARIES heapgate::http heapgate::pprof heapgate::httplib nlohmann_json::nlohmann_json
  LABELS http pprof)
target_compile_options(http_downloads_test PRIVATE -g -fno-omit-frame-pointer)
if(HEAPGATE_PPROF)
  target_include_directories(http_downloads_test PRIVATE ${CMAKE_BINARY_DIR}/lib/pprof/generated)
  target_link_libraries(http_downloads_test PRIVATE protobuf::libprotobuf ZLIB::ZLIB)
  target_compile_definitions(http_downloads_test PRIVATE HEAPGATE_TEST_PPROF=1)
endif()
