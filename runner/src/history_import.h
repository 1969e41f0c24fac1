// SPDX-License-Identifier: MIT
// `heapgate history import-git`: the committed baselines' history as runs.
#pragma once

#include "history_add.h"

namespace CLI {
class App;
}  // namespace CLI

namespace heapgate::runner {

/// Adds --history and --lock-timeout to a `history` verb (cmd_history.cpp).
void add_store_options(CLI::App& command, HistoryFlags& flags);

/// Adds `import-git` to the `history` command (history_import.cpp).
void add_import_git_command(CLI::App& history, int& exit_code);

}  // namespace heapgate::runner
