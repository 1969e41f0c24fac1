# SQLiteCpp: C++ wrapper of SQLite (database); SQLiteCpp_tests against
# Debian's libsqlite3 (the vendored amalgamation is not used: a snapshot may
# lack sqlite3/sqlite3.c). Tests create database files in the working directory.
ZOO_REPO=SRombauts/SQLiteCpp
ZOO_COMMIT=211e642a30459b4a4ff091a47191c9bf287aca4c
ZOO_KIND="C++ database (SQLite)"
ZOO_PATCHES=(plant.patch)
ZOO_TARGETS=(SQLiteCpp_tests)
ZOO_BINARIES=(bin/SQLiteCpp_tests)
ZOO_PLANT_TEST="Statement.executeStep"
ZOO_PLANT_FILE=tests/Statement_test.cpp
