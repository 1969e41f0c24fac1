// SPDX-License-Identifier: MIT
// Private: what the SQLite store says when SQLite fails, and its prepared
// statements.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "heapgate/error.h"

namespace heapgate::detail {

/// The error of SQLite's result code `rc` while `doing`, at `path`: locked
/// past `lock_timeout`, not a database, corrupt, not writable, disk full,
/// each with its fix.
Error sqlite_error(const std::string& path, int rc, sqlite3* db, const std::string& doing,
                   std::chrono::milliseconds lock_timeout);

// A prepared statement, finalized when it goes.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }
  sqlite3_stmt** out() { return &stmt_; }
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, std::int64_t value) { sqlite3_bind_int64(stmt_, i, value); }
  void bind_null(int i) { sqlite3_bind_null(stmt_, i); }
  std::string text(int i) const {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p != nullptr
               ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
               : std::string();
  }
  std::int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace heapgate::detail
