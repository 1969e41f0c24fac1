// SPDX-License-Identifier: MIT
// Leak suppressions (heapgate/suppressions.h): parse_suppressions() and read_suppressions() of
// `leak:` lines, the built-in c_library_suppressions() by family, combine(), Suppressions::match().
#include "heapgate/suppressions.h"

#include <initializer_list>

#include "heapgate/frame_text.h"
#include "heapgate/sys.h"

namespace heapgate {

namespace {

bool matches(const Suppression& s, const std::string& frame, const std::string& bare) {
  if (!s.whole_name) return frame.find(s.pattern) != std::string::npos;
  if (!s.pattern.empty() && s.pattern.back() == '*') {
    return bare.compare(0, s.pattern.size() - 1, s.pattern, 0, s.pattern.size() - 1) == 0;
  }
  return bare == s.pattern;
}

// The C library's functions that keep what they allocate for the life of
// the process (or of the thread), by family. glibc's internal names are
// listed beside the public ones: without its debug symbols a frame may be
// named by either, and a tail call leaves only the inner one.
struct Family {
  const char* name;
  std::initializer_list<const char*> functions;
};
const Family kCLibraryFamilies[] = {
    {"setenv", {"setenv", "putenv", "__add_to_environ", "__setenv", "__putenv"}},
    {"tzset",
     {"tzset", "__tzset", "tzset_internal", "__tzfile_read", "__tzset_parse_tz", "__tzstring", "__tz_convert",
      "localtime", "localtime_r", "__localtime_r", "mktime", "timelocal", "__mktime_internal", "strftime", "strftime_l",
      "ctime", "ctime_r"}},
    {"locale",
     {"setlocale",
      "newlocale",
      "_nl_find_locale",
      "_nl_load_locale",
      "_nl_load_locale_from_archive",
      "_nl_intern_locale_data",
      "_nl_expand_alias",
      "textdomain",
      "bindtextdomain",
      "bind_textdomain_codeset",
      "gettext",
      "dgettext",
      "dcgettext",
      "ngettext",
      "dcngettext",
      "__dcigettext",
      "_nl_find_domain",
      "_nl_load_domain",
      "_nl_make_l10nflist",
      "__gconv_open",
      "__gconv_find_transform",
      "__gconv_find_shlib",
      "__gconv_read_conf",
      "__gconv_load_cache",
      "__wcsmbs_load_conv"}},
    {"NSS and resolver", {"__nss_*",          "_nss_*",        "nss_*",         "__resolv_*",    "__res_*",
                          "res_init",         "__check_pf",    "getpwnam",      "getpwuid",      "getgrnam",
                          "getgrgid",         "getspnam",      "getpwent",      "getgrent",      "gethostbyname",
                          "gethostbyname2",   "gethostbyaddr", "getservbyname", "getservbyport", "getprotobyname",
                          "getprotobynumber", "getnetbyname",  "getlogin",      "getservent",    "getprotoent",
                          "gethostent",       "initgroups",    "getgrouplist"}},
    {"stdio buffers", {"_IO_file_doallocate", "_IO_doallocbuf", "_IO_wfile_doallocate", "_IO_wdoallocbuf"}},
    // A thread_local object's destructor is registered on the thread's first use
    // of it and kept until the thread exits: on the main thread, for the process.
    {"atexit",
     {"__new_exitfn", "__internal_atexit", "__cxa_atexit", "atexit", "on_exit", "__cxa_thread_atexit_impl",
      "__cxa_thread_atexit"}},
    {"loader and thread-local storage", {"_dl_*", "__tls_get_addr", "__libc_dlopen_mode", "_dlerror_run", "dlerror"}},
    {"per-thread buffers", {"strerror", "strerror_l", "strsignal", "ttyname", "openlog", "syslog", "vsyslog"}},
};

}  // namespace

const Suppression* Suppressions::match(const StackSample& stack) const noexcept {
  for (const auto& frame : stack.frames) {
    const std::string bare = bare_function_name(split_frame(frame).function);
    for (const auto& s : entries) {
      if (matches(s, frame, bare)) return &s;
    }
  }
  return nullptr;
}

Suppressions c_library_suppressions() {
  Suppressions out;
  out.source = "heapgate's list of memory the C library keeps";
  for (const Family& family : kCLibraryFamilies) {
    const std::string source = out.source + " (" + family.name + ")";
    for (const char* function : family.functions) {
      out.entries.push_back(Suppression{function, "built in", source, true});
    }
  }
  return out;
}

Suppressions combine(Suppressions first, const Suppressions& more) {
  if (first.empty()) return more;
  if (more.empty()) return first;
  first.source += " and " + more.source;
  first.entries.insert(first.entries.end(), more.entries.begin(), more.entries.end());
  return first;
}

Result<Suppressions> parse_suppressions(std::string_view text, const std::string& source) {
  Suppressions out;
  out.source = source;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const std::string where = source + ":" + std::to_string(number);
    if (line.substr(0, 5) != "leak:" || line.size() == 5) {
      return fail(make_error(ErrorCode::parse_error, where,
                             "expected \"leak:<pattern>\", got \"" + std::string(line) + "\"",
                             "write one leak:<function or file pattern> per line, or start the line with # to "
                             "make it a comment"));
    }
    out.entries.push_back({std::string(line.substr(5)), where, source, false});
  }
  return out;
}

Result<Suppressions> read_suppressions(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) {
    Error e = text.error();
    e.where = path;
    e.what = "cannot read the suppressions file: " + e.what;
    e.fix = "create the file (one leak:<pattern> per line) or correct the --heapgate_suppressions path";
    return fail(std::move(e));
  }
  return parse_suppressions(*text, path);
}

}  // namespace heapgate
