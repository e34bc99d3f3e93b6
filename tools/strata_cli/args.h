// The command line of `strata` (tools/strata.cc): its usage text, the
// options of every command, and their parsing and checks. Parsing opens no
// file, so the fuzz target of the tools' arguments (tests/fuzz) runs it alone.
// Thread-compatible.
#ifndef STRATA_TOOLS_STRATA_CLI_ARGS_H_
#define STRATA_TOOLS_STRATA_CLI_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace strata::cli {

// The exit codes (documented in the usage text).
constexpr int kExitOk = 0;
constexpr int kExitProblem = 1;  // the files disagree or are damaged
constexpr int kExitUsage = 2;    // bad arguments, an unreadable directory, lost output

// The usage text --help prints.
extern const char kUsage[];

// Every option of every command; ParseArgs rejects an option the command
// does not take.
struct Args {
  std::string command;     // catalog, check, gc, notifications, get, scan, txn
  std::string subcommand;  // txn: row or locks
  std::string dir;
  bool json = false;
  bool hex = false;    // keys and values as hex, in and out
  bool files = false;  // catalog, gc
  bool deep = false;   // check
  std::string tenant;  // notifications, get, scan, txn
  std::string table;
  uint64_t rows = 50;  // notifications
  // get, txn row: the row (required); scan: the range.
  std::string row;
  std::string start_row;
  std::string end_row;
  std::optional<std::string> family;  // get, scan
  std::optional<std::string> column;  // get: a qualifier; txn row: a user column
  uint32_t versions = UINT32_MAX;     // get, scan: per column, newest first
  uint64_t limit = 0;                 // scan: rows; txn locks: locks; 0 = all
  uint64_t older_than_seconds = 0;    // txn locks
};

// Prints `error` and a pointer to --help on standard error; returns kExitUsage.
int Usage(const std::string& error);

// Fills *args from argv. An exit code when the program should stop at once:
// kExitOk after --help, kExitUsage (with a message) for bad arguments;
// nullopt to go on.
std::optional<int> ParseArgs(int argc, char** argv, Args* args);

}  // namespace strata::cli

#endif  // STRATA_TOOLS_STRATA_CLI_ARGS_H_
