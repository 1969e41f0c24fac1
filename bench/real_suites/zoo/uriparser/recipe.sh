# uriparser: RFC 3986 URI parser (C); gtest suite in test/ (testrunner), own
# main() in test/test.cpp.
ZOO_REPO=uriparser/uriparser
ZOO_COMMIT=6d7db1bac2fa4a712c35789b542388510aefabe9
ZOO_KIND="C URI parser"
ZOO_PATCHES=(heapgate.patch plant.patch)
ZOO_TARGETS=(testrunner)
ZOO_BINARIES=(uriparser/testrunner)
ZOO_PLANT_TEST="UriSuite.TestIpFour"
ZOO_PLANT_FILE=test/test.cpp
