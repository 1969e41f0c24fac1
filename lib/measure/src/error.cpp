// SPDX-License-Identifier: MIT
// ErrorCode names, Error::message() (`where: what; fix: fix`) and make_error() (heapgate/error.h).
#include "heapgate/error.h"

namespace heapgate {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::parse_error:
      return "parse_error";
    case ErrorCode::io_error:
      return "io_error";
    case ErrorCode::unavailable:
      return "unavailable";
    case ErrorCode::conflict:
      return "conflict";
    case ErrorCode::external_tool:
      return "external_tool";
    case ErrorCode::internal:
      return "internal";
  }
  return "internal";
}

std::string Error::message() const {
  std::string out;
  if (!where.empty()) {
    out += where;
    out += ": ";
  }
  out += what;
  if (!fix.empty()) {
    out += "; fix: ";
    out += fix;
  }
  return out;
}

Error make_error(ErrorCode code, std::string where, std::string what, std::string fix) {
  return Error{code, std::move(where), std::move(what), std::move(fix)};
}

}  // namespace heapgate
