// SPDX-License-Identifier: MIT
// Private: the texts the PostgreSQL store makes and reads: a URL fit to
// print, the server's message, the reasons a connection fails, COPY's rows
// and array literals.
#pragma once

#include <string>
#include <vector>

#include "heapgate/error.h"

namespace heapgate::detail {

/// `url` with its password replaced by "***", to print.
std::string without_password(const std::string& url);

/// The first line of a libpq message, without its trailing newline.
std::string first_line(std::string text);

/// A connection that failed with libpq's message `said`, at `location`,
/// with the fix for its cause (the password, the database, the server).
Error connection_error(const std::string& location, const std::string& said);

/// Appends `text` to `out` in COPY's text format (backslash escapes for
/// backslash, tab, newline and carriage return).
void append_copy_text(std::string& out, const std::string& text);

/// A PostgreSQL array literal of text values, for `unnest($1::text[])`.
std::string text_array(const std::vector<const std::string*>& values);

}  // namespace heapgate::detail
