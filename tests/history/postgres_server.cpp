// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "postgres_server.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {
namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// As `postgres` when root: initdb and the server refuse to run as root.
std::vector<std::string> as_server_user(std::vector<std::string> argv) {
  if (::geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  return argv;
}

bool run_ok(const std::vector<std::string>& argv, const std::string& what) {
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  auto ran = sys::run_process(argv, options);
  if (!ran) {
    ADD_FAILURE() << what << ": " << ran.error().message();
    return false;
  }
  if (ran->exit_code != 0) {
    ADD_FAILURE() << what << " failed (exit " << ran->exit_code << "):\n" << ran->stdout_text << ran->stderr_text;
    return false;
  }
  return true;
}

PostgresServer* the_server = nullptr;

}  // namespace

PostgresServer* PostgresServer::shared() {
  if (the_server != nullptr) return the_server->running_ ? the_server : nullptr;
  the_server = new PostgresServer;
  PostgresServer& s = *the_server;
  s.bin_ = HEAPGATE_POSTGRES_BIN;
  if (!sys::exists(s.bin_ + "/initdb")) {
    ADD_FAILURE() << "PostgreSQL's initdb not found in " << s.bin_
                  << "; fix: apt-get install postgresql (scripts/setup.sh does)";
    return nullptr;
  }
  char pattern[] = "/tmp/heapgate-pg.XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return nullptr;
  }
  s.dir_ = pattern;
  const std::string pwfile = s.dir_ + "/password";
  if (!sys::write_file_atomic(pwfile, std::string(kPostgresPassword) + "\n")) return nullptr;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      ADD_FAILURE() << "no user postgres to run the server as; fix: apt-get install postgresql";
      return nullptr;
    }
    if (::chown(s.dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0 || ::chown(pwfile.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      ADD_FAILURE() << "cannot give " << s.dir_ << " to postgres";
      return nullptr;
    }
  }
  if (!run_ok(as_server_user({s.bin_ + "/initdb", "-D", s.dir_ + "/data", "-U", "heapgate", "--pwfile=" + pwfile, "-A",
                              "scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"}),
              "initdb")) {
    return nullptr;
  }
  // A port another process takes between free_port() and the start: retry.
  for (int attempt = 0; attempt < 3 && !s.running_; ++attempt) {
    s.port_ = free_port();
    s.running_ = run_ok(
        as_server_user({s.bin_ + "/pg_ctl", "-D", s.dir_ + "/data", "-l", s.dir_ + "/log", "-w", "-t", "60", "-o",
                        "-p " + std::to_string(s.port_) + " -k " + s.dir_ +
                            " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60",
                        "start"}),
        "pg_ctl start");
  }
  if (!s.running_) return nullptr;
  std::atexit([] {
    if (the_server != nullptr) the_server->stop();
  });
  return &s;
}

std::string PostgresServer::url(const std::string& database, const std::string& password) const {
  return "postgresql://heapgate:" + password + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::new_database(const std::string& hint) {
  const std::string name = "hg_" + hint + "_" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  const std::string said = run_sql(url("postgres"), "CREATE DATABASE " + name);
  EXPECT_EQ(said, "") << "CREATE DATABASE " << name;
  return url(name);
}

void PostgresServer::stop() {
  if (!running_) return;
  running_ = false;
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(1);
  (void)sys::run_process(as_server_user({bin_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}),
                         options);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string run_sql(const std::string& url, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(url.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) return PQerrorMessage(conn.get());
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), &PQclear);
  const ExecStatusType status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return PQresultErrorMessage(result.get());
  return "";
}

std::string query_value(const std::string& url, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(url.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) return std::string("ERROR: ") + PQerrorMessage(conn.get());
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), &PQclear);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK)
    return std::string("ERROR: ") + PQresultErrorMessage(result.get());
  if (PQntuples(result.get()) == 0) return "";
  return PQgetvalue(result.get(), 0, 0);
}

}  // namespace heapgate::testing
