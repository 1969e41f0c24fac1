# google/leveldb: key-value store (C++); leveldb_tests (DB, version set, table,
# log, skip-list tests), whose DBs hand memtable flushes and compactions to the
# Env's one background thread. Build recipe:
# bench/real_suites/leveldb-CMakeLists.patch (GoogleTest from Debian's
# /usr/src/googletest, heapgate added, heapgate::gtest_main in place of
# gtest_main).
# The plant (plant.patch): one malloc(24)/free per key a compaction merges, in
# the loop of leveldb::DBImpl::DoCompactionWork (db/db_impl.cc). Only the
# background thread runs it: MaybeScheduleCompaction() hands DBImpl::BGWork to
# env_->Schedule(), whose thread calls BackgroundCall() ->
# BackgroundCompaction() -> DoCompactionWork(); the test's thread only waits
# (TEST_CompactRange). DBTest.CompactionsGenerateMultipleFiles reopens a DB
# with 80 values in its log (the reopening thread writes them to a level-0
# table) and then compacts that table into level 1 by TEST_CompactRange(0):
# one background compaction over 80 keys, +80 allocations on the other
# thread, about 14% of the 575 it makes there.
ZOO_NEW=0
ZOO_REPO=google/leveldb
ZOO_COMMIT=78a352f47ed6c1e9d750545e9b242289185b87e1
ZOO_KIND="C++ key-value store, background compaction thread"
ZOO_PATCHES=(../../leveldb-CMakeLists.patch plant.patch)
ZOO_CMAKE_SOURCE=source
ZOO_CMAKE_ARGS=(-DCMAKE_CXX_STANDARD=17 -DLEVELDB_BUILD_TESTS=ON -DLEVELDB_BUILD_BENCHMARKS=OFF -DLEVELDB_INSTALL=OFF)
ZOO_TARGETS=(leveldb_tests)
ZOO_BINARIES=(leveldb_tests)
ZOO_PLANT_TEST="DBTest.CompactionsGenerateMultipleFiles"
ZOO_PLANT_FILE=db/db_impl.cc
