// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate fetch` end to end: the built CLI against heapgate::HttpServer in
// this process (which profiles every allocation, so a run's profile is exact),
// and against scripted cpp-httplib servers for the answers a healthy server
// does not give (500, silence, Mesos' 400s, 409, a replaced run).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "heapgate/http.h"
#include "heapgate/profile.h"
#include "http_test_support.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

sys::ProcessResult fetch(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), {HEAPGATE_CLI_PATH, "fetch"});
  sys::ProcessOptions options;
  // The CLI must not inherit this process' profiling settings or a token.
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "HEAPGATE_HTTP_TOKEN"};
  options.extra_env = std::move(env);
  options.timeout = std::chrono::minutes(2);
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  return names;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

// Failures print one line, name the thing, exit 2, and leave no file behind.
void expect_clean_failure(const sys::ProcessResult& r, const std::string& dir, const std::string& expected) {
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(expected), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "");
  EXPECT_TRUE(files_in(dir).empty()) << "left behind: " << files_in(dir).front();
}

void expect_one_line(const sys::ProcessResult& r) {
  auto lines = lines_of(r.stderr_text);
  ASSERT_EQ(lines.size(), 1u) << r.stderr_text;
  EXPECT_EQ(lines[0].rfind("heapgate: ", 0), 0u) << lines[0];
}

std::string url_of(const TestServer& t) { return "http://127.0.0.1:" + std::to_string(t.server->port()); }

json state_of(TestServer& t) {
  auto res = t.get("/memory-profiler/state");
  EXPECT_TRUE(res && res->status == 200);
  return res ? json::parse(res->body) : json();
}

// The id of the run in progress, once one is (polled), or -1.
long long wait_for_active_run(TestServer& t) {
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < give_up) {
    json run = state_of(t)["memory_profiler"]["current_run"];
    if (run["id"].is_number() && run.contains("remaining_seconds") && run["remaining_seconds"].get<double>() > 0) {
      return run["id"].get<long long>();
    }
    std::this_thread::sleep_for(5ms);
  }
  ADD_FAILURE() << "no profiling run started";
  return -1;
}

// Kept live past the run's end, so the run's profile holds them.
std::vector<std::unique_ptr<char[]>> g_kept;

__attribute__((noinline)) void allocate_during_run(int blocks) {
  for (int i = 0; i < blocks; ++i) g_kept.emplace_back(new char[1024]);
}

HttpOptions fast_runs() {
  HttpOptions options;
  // Sub-second runs keep each fetch short.
  options.minimum_duration = 100ms;
  return options;
}

class FetchFromHeapgate : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    server_ = std::make_unique<TestServer>(fast_runs());
    ASSERT_TRUE(server_->server);
    dir_ = make_temp_dir();
  }
  TestServer& t() { return *server_; }
  std::unique_ptr<TestServer> server_;
  std::string dir_;
};

TEST_F(FetchFromHeapgate, RawProfileOfTheRunIsWrittenAndParses) {
  const std::string out = dir_ + "/run.heap";
  // host:port without a scheme, as HEAPGATE_HTTP is written.
  auto cli = std::async(std::launch::async, [&] {
    return fetch({"--url", "127.0.0.1:" + std::to_string(t().server->port()), "--duration", "1secs", "-o", out});
  });
  const long long id = wait_for_active_run(t());
  allocate_during_run(100);
  auto r = cli.get();
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("profiling run " + std::to_string(id) + ": "), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("wrote the raw profile of run " + std::to_string(id) + " to " + out), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "");
  auto profile = read_profile(out);
  ASSERT_TRUE(profile) << profile.error().message();
  EXPECT_EQ(profile->sample_period, 1u);
  // Every allocation is sampled: the run's 100 KiB are all there.
  EXPECT_GE(profile->totals.live_bytes, 100u * 1024u);
  EXPECT_EQ(files_in(dir_), std::vector<std::string>{"run.heap"});
}

TEST_F(FetchFromHeapgate, TextFormatIsJeprofText) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  const std::string out = dir_ + "/run.txt";
  auto cli = std::async(std::launch::async, [&] {
    return fetch({"--url", url_of(t()), "--duration", "1secs", "--format", "text", "-o", out});
  });
  ASSERT_GT(wait_for_active_run(t()), 0);
  allocate_during_run(100);
  auto r = cli.get();
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  auto text = sys::read_file(out);
  ASSERT_TRUE(text);
  // jeprof --text: "Total: 0.1 MB", then flat/cum columns per function,
  // symbolized on the server against this very binary.
  EXPECT_EQ(text->rfind("Total: ", 0), 0u) << text->substr(0, 300);
  auto parsed = parse_jeprof_text(*text);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_NE(text->find("allocate_during_run"), std::string::npos) << *text;
}

// Someone stops our run early and starts their own: only ours is downloaded.
// (Mesos' script, `download/raw` without an id, would get a 400 now and the
// other run's profile later.)
TEST_F(FetchFromHeapgate, ARunStartedMeanwhileIsNotDownloadedInsteadOfOurs) {
  const std::string out = dir_ + "/ours.heap";
  auto cli = std::async(std::launch::async, [&] {
    return fetch({"--url", url_of(t()), "--duration", "30secs", "-o", out});
  });
  const long long ours = wait_for_active_run(t());
  ASSERT_GT(ours, 0);
  ASSERT_EQ(t().get("/memory-profiler/stop")->status, 200);
  auto theirs = t().get("/memory-profiler/start?duration=1hrs");
  ASSERT_EQ(theirs->status, 200) << theirs->body;
  const long long other = json::parse(theirs->body)["id"];
  ASSERT_NE(other, ours);
  allocate_during_run(50);  // so their profile cannot equal ours

  auto r = cli.get();
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("profile of run " + std::to_string(ours)), std::string::npos) << r.stderr_text;
  auto written = sys::read_file(out);
  ASSERT_TRUE(written);
  auto served = t().get("/memory-profiler/download/raw?id=" + std::to_string(ours));
  ASSERT_EQ(served->status, 200);
  EXPECT_EQ(*written, served->body);
  EXPECT_EQ(t().get("/memory-profiler/download/raw")->status, 400);  // what an id-less download gets now

  // Once their run finishes, theirs is what an id-less download gets: not ours.
  ASSERT_EQ(t().get("/memory-profiler/stop")->status, 200);
  auto latest = t().get("/memory-profiler/download/raw");
  ASSERT_EQ(latest->status, 200);
  EXPECT_NE(latest->body, *written);
}

TEST_F(FetchFromHeapgate, AnActiveRunIsRefusedUnlessJoined) {
  auto theirs = t().get("/memory-profiler/start?duration=3secs");
  ASSERT_EQ(theirs->status, 200);
  const std::string id = std::to_string(json::parse(theirs->body)["id"].get<long long>());

  auto refused = fetch({"--url", url_of(t()), "-o", dir_ + "/x.heap"});
  expect_clean_failure(refused, dir_, "profiling run " + id + " is already active");
  EXPECT_NE(refused.stderr_text.find("--join"), std::string::npos);
  expect_one_line(refused);
  // The run was left alone.
  EXPECT_EQ(std::to_string(state_of(t())["memory_profiler"]["current_run"]["id"].get<long long>()), id);

  auto joined = fetch({"--url", url_of(t()), "--join", "-o", dir_ + "/joined.heap"});
  ASSERT_EQ(joined.exit_code, 0) << joined.stderr_text;
  EXPECT_NE(joined.stderr_text.find("joining profiling run " + id), std::string::npos) << joined.stderr_text;
  EXPECT_NE(joined.stderr_text.find("wrote the raw profile of run " + id), std::string::npos) << joined.stderr_text;
  EXPECT_TRUE(read_profile(dir_ + "/joined.heap"));
}

TEST_F(FetchFromHeapgate, BadDurationPrintsTheServersMessage) {
  auto r = fetch({"--url", url_of(t()), "--duration", "5minutes", "-o", dir_ + "/x.heap"});
  expect_clean_failure(r, dir_, "Unknown duration unit 'minutes'");
  EXPECT_NE(r.stderr_text.find("fix: give --duration in Mesos syntax"), std::string::npos) << r.stderr_text;
  expect_one_line(r);
  EXPECT_TRUE(state_of(t())["memory_profiler"]["current_run"]["id"].is_null());
}

TEST_F(FetchFromHeapgate, UnwritableOutputFailsBeforeAnyRunStarts) {
  auto missing = fetch({"--url", url_of(t()), "-o", dir_ + "/no/such/dir/x.heap"});
  expect_clean_failure(missing, dir_,
                       "-o " + dir_ + "/no/such/dir/x.heap: cannot create files in " + dir_ + "/no/such/dir");
  expect_one_line(missing);
  auto directory = fetch({"--url", url_of(t()), "-o", dir_});
  expect_clean_failure(directory, dir_, "-o " + dir_ + ": is a directory");
  EXPECT_TRUE(state_of(t())["memory_profiler"]["current_run"]["id"].is_null());
}

TEST(FetchWithToken, BearerTokenFromTheEnvironment) {
  HEAPGATE_REQUIRE_PROFILING();
  HttpOptions options = fast_runs();
  options.bearer_token = "s3cret";
  TestServer t(options);
  ASSERT_TRUE(t.server);
  const std::string dir = make_temp_dir();
  auto refused = fetch({"--url", url_of(t), "-o", dir + "/x.heap"});
  expect_clean_failure(refused, dir, "the server refused the request (401)");
  EXPECT_NE(refused.stderr_text.find("pass --token TOKEN, or set HEAPGATE_HTTP_TOKEN"), std::string::npos);
  auto wrong = fetch({"--url", url_of(t), "--token", "guess", "-o", dir + "/x.heap"});
  expect_clean_failure(wrong, dir, "check the token");
  auto ok = fetch({"--url", url_of(t), "--duration", "200ms", "-o", dir + "/x.heap"}, {"HEAPGATE_HTTP_TOKEN=s3cret"});
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_text;
  EXPECT_TRUE(read_profile(dir + "/x.heap"));
}

// A cpp-httplib server on a free loopback port answering as scripted.
class ScriptedServer {
 public:
  explicit ScriptedServer(const std::function<void(httplib::Server&, ScriptedServer&)>& routes) {
    // A client that gave up makes a late answer write to a closed socket.
    std::signal(SIGPIPE, SIG_IGN);
    routes(server_, *this);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~ScriptedServer() {
    release();
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A handler that never answers, until the test ends.
  void hang() {
    std::unique_lock<std::mutex> lock(mutex_);
    released_cv_.wait_for(lock, 60s, [this] { return released_; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
};

void answer(httplib::Server& server, const std::string& path, int status, const std::string& body,
            const char* type = "text/plain; charset=utf-8") {
  server.Get(path, [=](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    res.set_content(body, type);
  });
}

TEST(FetchFailures, ServerError500) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer&) {
    answer(server, "/memory-profiler/start", 500, "Internal error: boom\n");
  });
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", s.url(), "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir,
                       s.url() +
                           "/memory-profiler/start: cannot start a run: the server answered 500: "
                           "Internal error: boom; fix: see the service's log");
  expect_one_line(r);
}

TEST(FetchFailures, ServerThatNeverAnswersTimesOut) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer& self) {
    server.Get("/memory-profiler/start", [&self](const httplib::Request&, httplib::Response& res) {
      self.hang();
      res.status = 500;
    });
  });
  const std::string dir = make_temp_dir();
  const auto began = std::chrono::steady_clock::now();
  auto r = fetch({"--url", s.url(), "--timeout", "1s", "--duration", "30secs", "-o", dir + "/x.heap"});
  EXPECT_LT(std::chrono::steady_clock::now() - began, 15s);
  expect_clean_failure(r, dir, s.url() + "/memory-profiler/start?duration=30secs: no answer within 1s");
  EXPECT_NE(r.stderr_text.find("raise --timeout"), std::string::npos) << r.stderr_text;
  expect_one_line(r);
}

// Mesos' long messages span paragraphs; the line keeps the first one.
TEST(FetchFailures, MesosMessageOn400IsPrintedOnOneLine) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer&) {
    answer(server, "/memory-profiler/start", 400,
           "\nThe current process seems to be using jemalloc, but profiling\ncouldn't be enabled.\n\nIf you're using a "
           "custom version of libjemalloc, make sure that\nMALLOC_CONF=\"prof:true\" is part of the environment.\n");
  });
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", s.url(), "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir,
                       "the server answered 400: The current process seems to be using jemalloc, but profiling "
                       "couldn't be enabled; fix: start the service with MALLOC_CONF=prof:true,prof_active:false");
  expect_one_line(r);
}

TEST(FetchFailures, ProfilingStartedExternallyIs409) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer&) {
    answer(server, "/memory-profiler/start", 409, "Heap profiling was started externally.\n");
  });
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", s.url(), "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir, "the server answered 409: Heap profiling was started externally");
  expect_one_line(r);
}

TEST(FetchFailures, ConnectionRefused) {
  // A port that was free a moment ago and has no listener now.
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(sock);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", url, "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir, url + "/memory-profiler/start: cannot connect");
  expect_one_line(r);
}

// Our run ended, someone else's run started and ended before the download:
// the server now serves only theirs. A download without the id would get it.
TEST(FetchFailures, ReplacedRunIsAnErrorNotTheOtherProfile) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer&) {
    answer(server, "/memory-profiler/start", 200,
           R"({"id":100,"message":"Successfully started new heap profiling run.","remaining_seconds":"0"})",
           "application/json");
    answer(server, "/memory-profiler/state", 200,
           R"({"memory_profiler":{"current_run":{"id":101,"remaining_seconds":0},"jemalloc_detected":true}})",
           "application/json");
    server.Get("/memory-profiler/download/raw", [](const httplib::Request& req, httplib::Response& res) {
      if (req.has_param("id") && req.get_param_value("id") != "101") {
        res.status = 400;
        res.set_content("Cannot serve requested id #" + req.get_param_value("id") + ".\n", "text/plain");
        return;
      }
      res.set_content("heap_v2/1\n  t*: 1: 64 [0: 0]\n", "application/octet-stream");
    });
  });
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", s.url(), "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir, "the profile of run 100 is no longer served");
  EXPECT_NE(r.stderr_text.find("it now reports run 101"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("fix: run heapgate fetch again"), std::string::npos) << r.stderr_text;
}

TEST(FetchFailures, NotAMemoryProfiler) {
  ScriptedServer s([](httplib::Server& server, ScriptedServer&) {
    answer(server, "/memory-profiler/start", 200, "<html>hello</html>", "text/html");
  });
  const std::string dir = make_temp_dir();
  auto r = fetch({"--url", s.url() + "/", "-o", dir + "/x.heap"});
  expect_clean_failure(r, dir, "the answer is not the memory profiler's JSON: <html>hello</html>");
  expect_one_line(r);
  auto missing = fetch({"--url", s.url() + "/mesos", "-o", dir + "/x.heap"});
  expect_clean_failure(missing, dir,
                       s.url() + "/mesos/memory-profiler/start: no memory profiler at this address (404)");
}

TEST(FetchBadInput, FlagsAndUrls) {
  const std::string dir = make_temp_dir();
  auto flag = fetch({"--url", "127.0.0.1:1", "--frobnicate", "-o", dir + "/x.heap"});
  expect_clean_failure(flag, dir, "--frobnicate");
  auto scheme = fetch({"--url", "ftp://127.0.0.1:1", "-o", dir + "/x.heap"});
  expect_clean_failure(scheme, dir, "--url ftp://127.0.0.1:1: scheme \"ftp\" is not http or https");
  auto port = fetch({"--url", "127.0.0.1:http", "-o", dir + "/x.heap"});
  expect_clean_failure(port, dir, "port \"http\" is not a number in 1..65535");
  auto timeout = fetch({"--url", "127.0.0.1:1", "--timeout", "soon", "-o", dir + "/x.heap"});
  expect_clean_failure(timeout, dir, "--timeout: \"soon\" is not a positive duration");
  auto format = fetch({"--url", "127.0.0.1:1", "--format", "pdf", "-o", dir + "/x.heap"});
  expect_clean_failure(format, dir, "--format");
  auto output = fetch({"--url", "127.0.0.1:1"});
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_NE(output.stderr_text.find("--output"), std::string::npos) << output.stderr_text;
}

}  // namespace
}  // namespace heapgate::testing
