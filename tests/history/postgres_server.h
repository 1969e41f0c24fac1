// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A real PostgreSQL server for the history tests: initdb and pg_ctl into a
// temporary directory on a free loopback port, as the `postgres` user when
// the tests run as root (PostgreSQL refuses to run as root). One server per
// test binary, started on first use and stopped when the binary ends.
#pragma once

#include <string>

namespace heapgate::testing {

/// The password of the server's superuser `heapgate` (scram-sha-256).
inline constexpr const char* kPostgresPassword = "heapgate-test-password";

/// The shared server: started on the first call. Fails the calling test
/// (ADD_FAILURE) and returns nullptr when it cannot start.
class PostgresServer {
 public:
  static PostgresServer* shared();

  /// postgresql://heapgate:PASSWORD@127.0.0.1:PORT/DATABASE
  std::string url(const std::string& database, const std::string& password = kPostgresPassword) const;
  /// A new empty database, named after `hint` and a counter; its URL.
  std::string new_database(const std::string& hint);
  int port() const { return port_; }

  /// Stops the server and removes its directory (also at exit).
  void stop();

 private:
  std::string dir_;
  std::string bin_;
  int port_ = 0;
  int databases_ = 0;
  bool running_ = false;
};

/// Runs SQL on `url` through libpq; returns "" or the server's error.
std::string run_sql(const std::string& url, const std::string& sql);

/// The first value of the first row of `sql` on `url`, or "ERROR: ...".
std::string query_value(const std::string& url, const std::string& sql);

}  // namespace heapgate::testing
