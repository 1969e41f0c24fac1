// SPDX-License-Identifier: MIT
// Text helpers of the PostgreSQL store (postgres_text.h): without_password(), first_line(),
// connection_error() with a fix per cause, COPY text escaping, and text[] array literals.
#include "postgres_text.h"

namespace heapgate::detail {

std::string without_password(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::size_t at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return url;
  const std::size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

std::string first_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  return text;
}

Error connection_error(const std::string& location, const std::string& said) {
  std::string fix = "check the URL, and that the server runs and accepts this user";
  if (said.find("password") != std::string::npos) {
    fix = "check the user and password in the URL (or PGPASSWORD, ~/.pgpass)";
  } else if (said.find("does not exist") != std::string::npos) {
    fix = "create the database (createdb NAME), or name an existing one in the URL";
  } else if (said.find("Connection refused") != std::string::npos || said.find("timeout") != std::string::npos ||
             said.find("could not translate host") != std::string::npos) {
    fix = "start the server, or check the host and port in the URL";
  }
  return make_error(ErrorCode::io_error, location, "cannot connect to PostgreSQL: " + said + "; nothing was written",
                    fix);
}

void append_copy_text(std::string& out, const std::string& text) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
}

std::string text_array(const std::vector<const std::string*>& values) {
  std::string out = "{";
  for (const std::string* value : values) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : *value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace heapgate::detail
