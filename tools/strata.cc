// strata: inspects an engine directory (engine/README.md, "Directory
// layout") without changing it. `catalog` shows the catalog its MANIFEST
// describes (tenants, tables and their schemas, tablets, the files of each
// locality group level by level, the log's floor and newest segment), and
// `check` that the files the catalog names are there as recorded; neither
// opens an engine (Manifest::Read, unlike an engine's open, rewrites
// nothing).
//
// The log itself is strata-wal's (`strata-wal verify <dir>` checks it as
// recovery would); one SSTable's blocks and cells are strata-sst's. `strata
// gc <services-dir>` reads the garbage collectors' safepoints from a
// transaction-services directory (gc/README.md).
//
// The commands that read cells open an engine on a snapshot of the directory
// (its manifest and log copied, its table files hard-linked, or copied when
// the file system cannot link them) in a directory made beside it and
// removed after (strata_cli/snapshot.h), taken again a few times while the
// manifest changes under the copy, so the directory itself is only read, as
// with the other commands, and may be one an engine has open or a copy of
// one (a checkpoint):
//   - `notifications --tenant=T --table=X`: a transactional table's pending
//     notifications and observers' acks (observer/README.md);
//   - `get --row=R` and `scan [--start=R] [--end=R]`: a table's cells as
//     Table::ReadRow and Table::Scan return them (family, qualifier,
//     timestamp, value; delete markers are applied by the read, not shown),
//     filtered by --family, --column and --versions, at most --limit rows;
//   - `txn row --row=R [--column=C]`: a transactional table's row decoded
//     per user column (txn/FORMAT.md): its lock (start_ts, kind, primary,
//     age, TTL, min_commit_ts, owner) with its transaction's state as the
//     primary says it in the same snapshot (a primary's TTL spent or not; a
//     secondary's primary locked, committed, rolled back, not prewritten,
//     or in a table that is gone), its write
//     records (commit_ts, kind, start_ts, the value inline or from the data
//     family), data cells no record names, notifications and acks;
//   - `txn locks [--older-than=SECONDS]`: every lock of a transactional
//     table, at least that old: what an operator looks at when a
//     transaction seems stuck.
// Keys and values print escaped (printable ASCII as is, other bytes as
// \xNN), or in hex with --hex (which also reads --row, --start, --end and
// --column as hex). Every command takes --json: one JSON document on standard
// output, byte strings escaped with a <name>_hex member beside them when
// escaping changed them, and {"error": ...} from a command that fails before
// its document begins (args.cc, the usage text, says it all).
//
// Exit codes: 0 ok; 1 the catalog and the files disagree, a file is damaged
// or missing, a record does not decode, or the snapshot cannot be taken
// (beside the directory, or while its manifest keeps changing) or does not
// open; 2 bad arguments, a directory that cannot be read or is no engine
// directory, a tenant, table or family that is not there, a table that is
// not transactional given to notifications or txn, or output that could not
// be written. Messages name the directory's files, never the snapshot's.
#include "strata_cli/args.h"
#include "strata_cli/commands.h"
#include "strata_cli/output.h"
#include "tool_util.h"

namespace strata::cli {
namespace {

int Run(const Args& args) {
  if (args.command == "catalog") return CmdCatalog(args);
  if (args.command == "check") return CmdCheck(args);
  if (args.command == "gc") return CmdGc(args);
  if (args.command == "notifications") return CmdNotifications(args);
  if (args.command == "get") return CmdGet(args);
  if (args.command == "scan") return CmdScan(args);
  if (args.command == "txn" && args.subcommand == "row") return CmdTxnRow(args);
  if (args.command == "txn" && args.subcommand == "locks") return CmdTxnLocks(args);
  // ParseArgs accepts only the commands above.
  PrintError("no command '" + args.command + "'");
  return kExitUsage;
}

int Main(int argc, char** argv) {
  Args args;
  if (std::optional<int> code = ParseArgs(argc, argv, &args)) return *code;
  const int code = Run(args);
  // A command that failed before its document began still leaves one.
  if (args.json && code != kExitOk && !JsonWriter::AnyStarted()) {
    JsonWriter json(stdout);
    json.Fail(FirstError().empty() ? "failed" : FirstError());
  }
  return code;
}

}  // namespace
}  // namespace strata::cli

int main(int argc, char** argv) {
  const int code = strata::cli::Main(argc, argv);
  return strata::tools::FinishOutput("strata", code, /*error_code=*/strata::cli::kExitUsage);
}
