# google/crc32c: CRC32C checksums (portable, SSE4.2, ARM64 paths); crc32c_tests.
ZOO_REPO=google/crc32c
ZOO_COMMIT=2bbb3be42e20a0e6c0f7b39dc07dc863d9ffbc07
ZOO_KIND="C++ checksums (SIMD)"
ZOO_PATCHES=(plant.patch)
ZOO_TARGETS=(crc32c_tests)
ZOO_BINARIES=(crc32c_tests)
ZOO_PLANT_TEST="CRC32CTest.Crc32cStdString"
ZOO_PLANT_FILE=src/crc32c_unittest.cc
