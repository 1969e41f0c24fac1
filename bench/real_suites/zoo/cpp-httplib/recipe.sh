# yhirose/cpp-httplib: header-only HTTP/1.1 server and client (C++); its
# GoogleTest suite (test/test.cc) starts a Server on a thread of the test's,
# whose ThreadPool workers handle each connection, and talks to it over
# loopback. Build recipe: the wrapper zoo/cpp-httplib/CMakeLists.txt (zlib and
# the non-blocking getaddrinfo on; TLS, Brotli, zstd off; libcurl's headers
# from Debian's libcurl4-openssl-dev for test.cc's one libcurl client).
# The plant (plant.patch): one malloc(24)/free per route tried, in the loop of
# httplib::Server::dispatch_request (httplib.h), which Server::routing() calls
# for every request. Only the server's task queue runs it: listen_internal()
# hands each accepted socket to the ThreadPool (task_queue->enqueue(...
# process_and_close_socket ...)) -> process_request() -> routing(), so neither
# the test's thread nor the listening thread does. ServerTest.KeepAlive sends
# 7 requests to the fixture's server (about 34 GET, 19 POST routes), a 404 among
# them: +86 allocations on the workers, against ~400. (Once per request, in
# process_request(), was caught in tests of several requests, e.g.
# KeepAliveTest.MaxCount +5, but its line ranked below the top stacks the
# failure shows and was not named.)
ZOO_NEW=0
ZOO_REPO=yhirose/cpp-httplib
ZOO_COMMIT=6494edd8c03c55165825ae3078e2f55c595d8cb6
ZOO_KIND="C++ HTTP server/client, server thread pool on loopback"
ZOO_PATCHES=(plant.patch)
ZOO_TARGETS=(httplib-test)
ZOO_BINARIES=(httplib-test)
# The tests open ./www, ./image.jpg, ... of test/: the wrapper links them into
# the source root, the working directory of the runs. Tests also write and
# remove scratch files there, and bind fixed ports (1234, ...): run unsharded.
ZOO_RUN_DIR=source
# *_Online*: tests that need the internet (no network here); the TLS tests
# (certificates) are not built.
ZOO_ARGS=("--gtest_filter=-*_Online*")
ZOO_PLANT_TEST="ServerTest.KeepAlive"
ZOO_PLANT_FILE=httplib.h
