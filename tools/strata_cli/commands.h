// The commands of `strata` (tools/strata.cc; what each shows is in the usage
// text, args.cc). Each prints text, or one JSON document with args.json, to
// standard output, says what went wrong in one line on standard error, and
// returns the exit code.
#ifndef STRATA_TOOLS_STRATA_CLI_COMMANDS_H_
#define STRATA_TOOLS_STRATA_CLI_COMMANDS_H_

#include <optional>
#include <string>

#include "args.h"

namespace strata::engine {
struct Catalog;
}  // namespace strata::engine

namespace strata::cli {

// Reads the catalog of the engine directory `dir` without changing anything
// (catalog.cc). An exit code, after saying why, when `dir` is no readable
// engine directory (kExitUsage) or its manifest is damaged (kExitProblem).
std::optional<int> ReadCatalog(const std::string& dir, engine::Catalog* catalog);

int CmdCatalog(const Args& args);        // catalog.cc
int CmdCheck(const Args& args);          // catalog.cc
int CmdGc(const Args& args);             // gc.cc
int CmdNotifications(const Args& args);  // notifications.cc
int CmdGet(const Args& args);            // cells.cc
int CmdScan(const Args& args);           // cells.cc
int CmdTxnRow(const Args& args);         // txn_view.cc
int CmdTxnLocks(const Args& args);       // txn_view.cc

}  // namespace strata::cli

#endif  // STRATA_TOOLS_STRATA_CLI_COMMANDS_H_
