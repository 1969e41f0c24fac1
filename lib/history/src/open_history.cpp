// SPDX-License-Identifier: MIT
// open_history(): opens the history store a --history location names, PostgreSQL for a
// postgresql:// or postgres:// URL, else a SQLite file; is_postgresql_location().
#include "stores.h"

namespace heapgate {

bool is_postgresql_location(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

Result<std::unique_ptr<HistoryStore>> open_history(const std::string& location, const HistoryOpenOptions& options) {
  if (location.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, "--history", "empty",
                           "give a SQLite file path (heapgate-history.db) or a postgresql:// URL"));
  }
  if (is_postgresql_location(location)) return detail::open_postgres_history(location, options);
  return detail::open_sqlite_history(location, options);
}

}  // namespace heapgate
