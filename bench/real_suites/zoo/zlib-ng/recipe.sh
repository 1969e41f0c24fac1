# zlib-ng: zlib replacement with SIMD (C); gtest_zlib (compress/inflate
# round trips, gzip files, a deflate concurrency test on two threads).
# Own main() in test/test_main.cc.
ZOO_REPO=zlib-ng/zlib-ng
ZOO_COMMIT=94aacd8bd69b7bfafce14fbe7639274e11d92d51
ZOO_KIND="C compression"
ZOO_PATCHES=(heapgate.patch plant.patch)
ZOO_TARGETS=(gtest_zlib)
ZOO_BINARIES=(zlib-ng/gtest_zlib)
ZOO_PLANT_TEST="deflate.dictionary"
ZOO_PLANT_FILE=test/test_deflate_dict.cc
