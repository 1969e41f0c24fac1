// SPDX-License-Identifier: MIT
// Private: the two stores behind open_history().
#pragma once

#include <memory>
#include <string>

#include "heapgate/history.h"

namespace heapgate::detail {

/// The SQLite file at `path` (sqlite_store.cpp).
Result<std::unique_ptr<HistoryStore>> open_sqlite_history(const std::string& path, const HistoryOpenOptions& options);

/// The PostgreSQL database at `url` (postgres_store.cpp; without libpq,
/// postgres_unavailable.cpp says so).
Result<std::unique_ptr<HistoryStore>> open_postgres_history(const std::string& url, const HistoryOpenOptions& options);

}  // namespace heapgate::detail
