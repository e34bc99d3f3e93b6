// An engine opened on a snapshot of an engine directory, for the commands of
// `strata` that read cells (notifications, get, scan, txn): the directory's
// manifest and log copied, its table files hard-linked (copied when the file
// system cannot link them: the directory's `sst` on another file system),
// into a directory made beside it and removed when the SnapshotEngine goes.
// The directory itself is only read, so it may be one an engine has open.
// Messages name the directory's files, not the snapshot's.
// Thread-compatible.
#ifndef STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_
#define STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "args.h"
#include "strata/engine.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::cli {

class JsonWriter;

class SnapshotEngine {
 public:
  // Takes a snapshot of `dir` and opens an engine on it. kExitProblem (after
  // one line on standard error) when it cannot: the snapshot cannot be made
  // beside `dir` or its files copied, the manifest kept changing while it
  // was copied (tried a few times, with a pause between), or the engine does
  // not open on it.
  static std::optional<int> Open(const std::string& dir, std::unique_ptr<SnapshotEngine>* out);

  // Closes the engine (errors ignored: Close reports them) and removes the
  // snapshot.
  ~SnapshotEngine();
  SnapshotEngine(const SnapshotEngine&) = delete;
  SnapshotEngine& operator=(const SnapshotEngine&) = delete;

  // Table `table` of tenant `tenant`: NotFound when either is not there.
  Result<Table> FindTable(const std::string& tenant, const std::string& table);

  // Opens table `table` of tenant `tenant`; with `transactional`, requires
  // the transactional schema (txn/FORMAT.md). An exit code (after saying
  // why) when it cannot: kExitUsage for a tenant or table that is not there
  // or a table that is not transactional, kExitProblem otherwise.
  std::optional<int> OpenTable(const std::string& tenant, const std::string& table,
                               bool transactional, Table* out);

  // The exit code of a read that failed once the table was open, after one
  // line on standard error and, when `json` is given, after ending its
  // document with the message: kExitUsage for InvalidArgument (input the
  // table refuses), kExitProblem for everything else (a table file that is
  // missing, unreadable or damaged).
  int ReadFailed(const Status& s, JsonWriter* json = nullptr);

  // kExitUsage after saying `s` (arguments the table does not fit: a family
  // it does not have, say).
  int Refuse(const Status& s);

  // Closes the engine; kExitProblem (after saying why) when that fails.
  std::optional<int> Close();

  // `message` with the snapshot's path replaced by the directory's.
  std::string InSource(std::string message) const;

 private:
  SnapshotEngine(std::string source, std::string dir)
      : source_(std::move(source)), dir_(std::move(dir)) {}

  const std::string source_;  // the directory the snapshot is of (absolute)
  const std::string dir_;     // the snapshot
  std::unique_ptr<Engine> engine_;
};

// What a command that reads table args.table of tenant args.tenant opens:
// the catalog of args.dir first (so that a directory that is no engine
// directory is said to be one before anything is copied), then a snapshot
// of it, then the table (with `transactional`, which must be one). An exit
// code, after saying why, when any of them cannot be had.
std::optional<int> OpenForRead(const Args& args, bool transactional,
                               std::unique_ptr<SnapshotEngine>* engine, Table* table);

// Begins the output of a command that reads a table through a snapshot: with
// `json`, the document's root object and its members tenant, table and
// snapshot_of; else the line "<before>table 'X' of tenant 'T' (a snapshot
// of <dir>)<after>:".
void BeginTableOutput(const Args& args, JsonWriter* json, const std::string& before = "",
                      const std::string& after = "");

}  // namespace strata::cli

#endif  // STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_
