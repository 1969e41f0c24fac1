# snappy: compression (C++); snappy_unittest reads testdata/ (runs from the
# source directory). Build recipe: bench/real_suites/snappy-CMakeLists.patch.
ZOO_NEW=0
ZOO_REPO=google/snappy
ZOO_COMMIT=6281a07b7e08629884ec93a89fea6e05c62e599c
ZOO_KIND="C++ compression"
ZOO_PATCHES=(../../snappy-CMakeLists.patch plant.patch)
ZOO_CMAKE_SOURCE=source
ZOO_CMAKE_ARGS=(-DSNAPPY_BUILD_BENCHMARKS=OFF)
ZOO_TARGETS=(snappy_unittest)
ZOO_BINARIES=(snappy_unittest)
ZOO_RUN_DIR=source
ZOO_PLANT_TEST="Snappy.SimpleTests"
ZOO_PLANT_FILE=snappy_unittest.cc
