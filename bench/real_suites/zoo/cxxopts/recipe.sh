# jarro2783/cxxopts: C++ command-line option parser; options_test (Catch2 v2, vendored catch.hpp 2.13.11).
ZOO_REPO=jarro2783/cxxopts
ZOO_COMMIT=a3a21b31ef2894b5a802f041f40d51059469a259
ZOO_KIND="C++ option parser (Catch2 v2)"
ZOO_FRAMEWORK=catch2
ZOO_PATCHES=(plant.patch)
ZOO_TARGETS=(options_test)
ZOO_BINARIES=(options_test)
ZOO_PLANT_TEST="Short options"
ZOO_PLANT_FILE=test/options.cpp
