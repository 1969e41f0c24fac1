// SPDX-License-Identifier: MIT
// sqlite_error(): a SQLite result code turned into an io_error with its fix (locked, not a
// database, corrupt, read-only, disk full) for the SQLite history store.
#include "sqlite_statement.h"

namespace heapgate::detail {

Error sqlite_error(const std::string& path, int rc, sqlite3* db, const std::string& doing,
                   std::chrono::milliseconds lock_timeout) {
  const std::string said = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return make_error(ErrorCode::io_error, path,
                        doing + ": another process held the store's lock for more than " +
                            std::to_string(lock_timeout.count() / 1000.0).substr(0, 4) + " s (" + said +
                            "); nothing was written",
                        "run again when the other writer is done, or wait longer with --lock-timeout SECONDS");
    case SQLITE_NOTADB:
      return make_error(ErrorCode::io_error, path, "not a SQLite database (" + said + "); it was left as it is",
                        "give --history the path of a heapgate history file, or a new path");
    case SQLITE_CORRUPT:
      return make_error(ErrorCode::io_error, path,
                        doing + ": the database is corrupt (" + said + "); nothing was written",
                        "restore the file from a backup, or start a new history at another path");
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return make_error(ErrorCode::io_error, path, doing + ": cannot write here (" + said + "); nothing was written",
                        "give --history a path in a directory you can write to");
    case SQLITE_FULL:
      return make_error(ErrorCode::io_error, path, doing + ": the disk is full (" + said + "); nothing was written",
                        "free space on its file system, or give --history another path");
    default:
      return make_error(ErrorCode::io_error, path, doing + ": " + said + " (SQLite error " + std::to_string(rc) + ")",
                        "check the file; a new --history path starts a new store");
  }
}

}  // namespace heapgate::detail
