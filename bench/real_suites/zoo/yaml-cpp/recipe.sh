# yaml-cpp: YAML parser and emitter (C++); yaml-cpp-tests with its vendored
# GoogleTest 1.16. Build recipe: bench/real_suites/yaml-cpp-test-CMakeLists.patch.
ZOO_NEW=0
ZOO_REPO=jbeder/yaml-cpp
ZOO_COMMIT=c3f81127320662deb3e28f4da0a511f1faecd860
ZOO_KIND="C++ YAML parser"
ZOO_PATCHES=(../../yaml-cpp-test-CMakeLists.patch:-p0 plant.patch)
ZOO_CMAKE_SOURCE=source
ZOO_CMAKE_ARGS=(-DYAML_CPP_BUILD_TESTS=ON -DYAML_CPP_BUILD_TOOLS=OFF)
ZOO_TARGETS=(yaml-cpp-tests)
ZOO_BINARIES=(test/yaml-cpp-tests)
ZOO_PLANT_TEST="NodeTest.SequenceElementRemoval"
ZOO_PLANT_FILE=test/node/node_test.cpp
