// SPDX-License-Identifier: MIT
// Built without libpq: a postgresql:// history says how to get one.
#include "stores.h"

namespace heapgate {

bool postgresql_supported() noexcept { return false; }

namespace detail {

Result<std::unique_ptr<HistoryStore>> open_postgres_history(const std::string&, const HistoryOpenOptions&) {
  return fail(make_error(ErrorCode::unavailable, "--history",
                         "built without PostgreSQL support: install libpq-dev and reconfigure",
                         "apt-get install libpq-dev, then run cmake again (or use a SQLite file: --history FILE.db)"));
}

}  // namespace detail
}  // namespace heapgate
