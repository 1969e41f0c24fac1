# c-ares: asynchronous DNS resolver (C); its C++ test suite drives the library
# against mock DNS servers on loopback (UDP/TCP), and the event-thread tests
# run c-ares's own event thread. Own main() in test/ares-test-main.cc.
ZOO_REPO=c-ares/c-ares
ZOO_COMMIT=589b5887d47736e5b70a1fddaf9bf90297adde65
ZOO_KIND="C DNS resolver, mock servers on loopback"
ZOO_PATCHES=(heapgate.patch plant.patch)
ZOO_TARGETS=(arestest)
ZOO_BINARIES=(c-ares/test/arestest)
# *Live*: tests that query the real DNS (no network here).
ZOO_ARGS=("--gtest_filter=-*Live*")
ZOO_PLANT_TEST="LibraryTest.ParseAReplyOK"
ZOO_PLANT_FILE=test/ares-test-parse-a.cc
