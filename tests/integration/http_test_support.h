// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Shared by the http_*_test.cpp files: a server on a free loopback port and a
// real HTTP client.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <httplib.h>

#include "heapgate/http.h"

namespace heapgate::testing {

struct TestServer {
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;

  explicit TestServer(HttpOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;  // a free port: tests run in parallel
    auto started = HttpServer::start(options);
    if (!started) {
      ADD_FAILURE() << started.error().message();
      return;
    }
    server = std::move(*started);
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_read_timeout(60, 0);
  }

  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) {
    return client->Get(path.c_str(), headers);
  }
};

}  // namespace heapgate::testing
