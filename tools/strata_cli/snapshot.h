// An engine opened on a snapshot of an engine directory, for the commands of
// `strata` that read cells (notifications, get, scan, txn): the directory's
// manifest and log copied, its table files linked, into a directory made
// beside it and removed when the SnapshotEngine goes. The directory itself
// is only read, so it may be one an engine has open. Thread-compatible.
#ifndef STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_
#define STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_

#include <memory>
#include <optional>
#include <string>

#include "strata/engine.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::cli {

class SnapshotEngine {
 public:
  // Takes a snapshot of `dir` and opens an engine on it. An exit code (after
  // one line on standard error) when it cannot: kExitUsage when no snapshot
  // can be taken, kExitProblem when the engine does not open on it.
  static std::optional<int> Open(const std::string& dir, std::unique_ptr<SnapshotEngine>* out);

  // Closes the engine (errors ignored: Close reports them) and removes the
  // snapshot.
  ~SnapshotEngine();
  SnapshotEngine(const SnapshotEngine&) = delete;
  SnapshotEngine& operator=(const SnapshotEngine&) = delete;

  // Opens table `table` of tenant `tenant`; with `transactional`, requires
  // the transactional schema (txn/FORMAT.md). An exit code (after saying
  // why) when it cannot: kExitUsage for a tenant or table that is not there
  // or a table that is not transactional, kExitProblem otherwise.
  std::optional<int> OpenTable(const std::string& tenant, const std::string& table,
                               bool transactional, Table* out);

  // The exit code of a failed read, after one line on standard error:
  // kExitUsage for NotFound and InvalidArgument (a family the table does not
  // have, say), kExitProblem for everything else (a damaged file).
  int ReadFailed(const Status& s);

  // Closes the engine; kExitProblem (after saying why) when that fails.
  std::optional<int> Close();

 private:
  SnapshotEngine(std::string source, std::string dir) : source_(source), dir_(dir) {}

  const std::string source_;  // the directory the snapshot is of
  const std::string dir_;     // the snapshot
  std::unique_ptr<Engine> engine_;
};

}  // namespace strata::cli

#endif  // STRATA_TOOLS_STRATA_CLI_SNAPSHOT_H_
