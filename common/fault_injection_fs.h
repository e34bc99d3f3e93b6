// FaultInjectionFileSystem: a FileSystem for tests that wraps another one
// (normally the POSIX one) and can
//
//   * fail chosen calls: the next N calls of one kind, or calls after the
//     next K, or each call with a probability, optionally only for paths that
//     contain a given substring (FailAfter, FailRandomly);
//   * count the calls of each kind (OpCount);
//   * stop every mutating call at once, the moment of a crash
//     (SetFilesystemActive(false));
//   * simulate a power loss: forget every write made since the written file's
//     last successful Sync, and every file created since the last SyncDir of
//     its directory (DropUnsyncedData), or keep a torn prefix of each file's
//     last unsynced write (TearUnsyncedData).
//
// The power-loss model. For every file written through this object it keeps
// an undo log of the changes since the file's last Sync: appends, positioned
// writes (which may overwrite bytes, e.g. in preallocated space), Allocate,
// Truncate, and the truncation of an existing file by NewWritableFile. A
// successful Sync empties the log. DropUnsyncedData undoes the logs newest
// first, putting back the exact bytes and size each file had when it was last
// synced. A file whose creation was not followed by a SyncDir of its
// directory is deleted, since its directory entry was never durable.
// What is NOT modelled, and so survives DropUnsyncedData:
//   * renames and deletions, even when no SyncDir followed them. A renamed
//     file keeps its new name; if the target did not exist before, the
//     "created but not durable" mark moves with it (so an unsynced
//     create + rename still disappears), otherwise the rename counts as
//     durable, so that a crash never leaves neither the old nor the new file;
//   * directories made by CreateDirIfMissing;
//   * files written by other means than this object.
// Files that existed before any write through this object are durable as
// they are.
//
// Writes go to the wrapped file system at once (Append is not buffered here),
// so what readers see is what a crash would lose or keep. Writable files
// report fd() == -1, so callers that would write through a raw descriptor
// fall back to the FileSystem calls this object can see.
//
// Files still open when DropUnsyncedData or TearUnsyncedData runs are not a
// crash: those calls only require that no other thread is using the open
// files at that moment. Afterwards, every call on a writable file opened
// before them fails with IOError (their state is gone with the power), except
// Close and Size. Callers normally close everything first.
//
// Thread-safe. File objects it returns follow the FileSystem contract
// (writable files are thread-compatible, random-access files thread-safe) and
// must not outlive this object.
#ifndef STRATA_COMMON_FAULT_INJECTION_FS_H_
#define STRATA_COMMON_FAULT_INJECTION_FS_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/mutex.h"
#include "common/random.h"

namespace strata {

// The kinds of calls faults can be injected into and that are counted.
enum class FaultOp : int {
  kOpen = 0,  // NewSequentialFile, NewRandomAccessFile, NewWritableFile
  kWrite,     // WritableFile::Append, WriteAt, Flush
  kSync,      // WritableFile::Sync
  kAllocate,  // WritableFile::Allocate
  kTruncate,  // WritableFile::Truncate
  kRename,    // FileSystem::RenameFile
  kDelete,    // FileSystem::DeleteFile, DeleteDir
  kSyncDir,   // FileSystem::SyncDir
  kRead,      // SequentialFile::Read, RandomAccessFile::Read
};
constexpr int kNumFaultOps = static_cast<int>(FaultOp::kRead) + 1;

// "open", "write", ... for messages.
const char* FaultOpName(FaultOp op);

class FaultInjectionFileSystem final : public FileSystem {
 public:
  // `base` must outlive this object; nullptr means FileSystem::Default().
  explicit FaultInjectionFileSystem(FileSystem* base = nullptr);
  ~FaultInjectionFileSystem() override;
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;

  FileSystem* base() const { return base_; }

  // ---- Injected failures -------------------------------------------------
  //
  // A failed call does nothing and returns IOError for `err` == EIO (and any
  // other value but the two below) or ResourceExhausted for ENOSPC or EDQUOT;
  // the message names the call, the path and the word "injected". Several
  // faults may be active; each sees every call of its kind whose path
  // contains its `path_filter` (empty: all paths) and the call fails if any
  // of them says so.

  // Lets the next `skip` matching calls of kind `op` succeed, then fails the
  // next `count` (count < 0: every one until ClearFaults).
  void FailAfter(FaultOp op, int skip, int count, int err, const std::string& path_filter = "")
      LOCKS_EXCLUDED(mu_);
  // Fails each matching call of kind `op` with probability `probability`,
  // drawn from a generator seeded with `seed`, until ClearFaults.
  void FailRandomly(FaultOp op, double probability, uint64_t seed, int err,
                    const std::string& path_filter = "") LOCKS_EXCLUDED(mu_);
  // Removes every fault (for one kind, or for all).
  void ClearFaults(FaultOp op) LOCKS_EXCLUDED(mu_);
  void ClearFaults() LOCKS_EXCLUDED(mu_);

  // false: every call that would change a file or directory (opening for
  // write, Append, WriteAt, Flush, Sync, Allocate, Truncate, RenameFile,
  // DeleteFile, DeleteDir, CreateDirIfMissing, SyncDir) fails with IOError,
  // as at the instant of a crash. Reads still work. Starts true.
  void SetFilesystemActive(bool active) LOCKS_EXCLUDED(mu_);
  bool IsFilesystemActive() const LOCKS_EXCLUDED(mu_);

  // ---- Counters -----------------------------------------------------------

  // Calls of kind `op` made so far, failed ones included.
  uint64_t OpCount(FaultOp op) const LOCKS_EXCLUDED(mu_);
  // Calls of kind `op` that failed because of an injected fault or because
  // the file system was inactive.
  uint64_t InjectedCount(FaultOp op) const LOCKS_EXCLUDED(mu_);
  void ResetCounters() LOCKS_EXCLUDED(mu_);

  // ---- Power loss ---------------------------------------------------------

  // Undoes everything not yet durable (see the model above): each file goes
  // back to its content and size at its last Sync, files created since their
  // directory's last SyncDir are deleted. Afterwards all that is on disk
  // counts as durable. REQUIRES: no other thread uses a file opened through
  // this object during the call.
  Status DropUnsyncedData() LOCKS_EXCLUDED(mu_);
  // Like DropUnsyncedData, but of each file's last unsynced Append or WriteAt
  // a prefix survives, written over the otherwise restored file: a torn
  // write. The prefix is `keep_bytes` long (at most the write's length), or,
  // with `rnd`, a uniformly chosen length in [0, length of the write).
  Status TearUnsyncedData(Random* rnd) LOCKS_EXCLUDED(mu_);
  Status TearUnsyncedData(uint64_t keep_bytes) LOCKS_EXCLUDED(mu_);

  // Paths of the files that have unsynced changes or were created since
  // their directory's last SyncDir, sorted. Paths are kept with repeated and
  // trailing slashes collapsed, and are otherwise compared as given: use one
  // spelling for a file and its directory.
  std::vector<std::string> UnsyncedFiles() const LOCKS_EXCLUDED(mu_);

  // ---- FileSystem ---------------------------------------------------------

  Status NewSequentialFile(const std::string& path,
                           std::unique_ptr<SequentialFile>* result) override;
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* result) override;
  Status NewWritableFile(const std::string& path, const FileOpenOptions& options,
                         std::unique_ptr<WritableFile>* result) override;
  bool FileExists(const std::string& path) override;
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDirIfMissing(const std::string& dir) override;
  Status DeleteDir(const std::string& dir) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override;
  Status UnlockFile(std::unique_ptr<FileLock> lock) override;

 private:
  class FaultWritableFile;
  class FaultSequentialFile;
  class FaultRandomAccessFile;

  struct Fault {
    FaultOp op;
    int err;
    std::string path_filter;
    // FailAfter mode.
    int skip = 0;
    int count = 0;  // < 0: forever
    // FailRandomly mode when random is set.
    double probability = 0;
    std::unique_ptr<Random> random;
  };

  // One change to a file since its last Sync, with what it takes to undo it.
  struct Undo {
    uint64_t offset = 0;    // where the change starts
    uint64_t new_len = 0;   // bytes written at offset (0: a size-only change)
    uint64_t old_size = 0;  // file size before the change
    std::string old_bytes;  // the bytes at [offset, offset + old_bytes.size()) before
  };

  // What is not yet durable about one file. Shared by the map below and the
  // open writable files on it, so it follows renames.
  struct FileState {
    std::string path;          // current name
    std::vector<Undo> undo;    // oldest first
    bool new_entry = false;    // created since the last SyncDir of its directory
    bool detached = false;     // deleted or replaced: no longer in files_
    bool invalidated = false;  // reset by a simulated power loss
  };

  // Counts a call of kind `op` (named `what` in messages) on `path` and
  // decides whether it fails: returns the injected error, or OK. `mutating`
  // calls also fail while the file system is inactive.
  Status CheckFault(FaultOp op, const char* what, const std::string& path, bool mutating)
      LOCKS_EXCLUDED(mu_);
  Status CheckFaultLocked(FaultOp op, const char* what, const std::string& path, bool mutating)
      EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The IOError for a mutating call while inactive.
  static Status InactiveError(const char* what, const std::string& path);

  // Returns the state for `path`, creating it if missing.
  std::shared_ptr<FileState> StateFor(const std::string& path) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Common body of DropUnsyncedData and TearUnsyncedData. `keep` maps the
  // length of a file's last unsynced write to the prefix to keep; null: none.
  template <typename KeepFn>
  Status ResetUnsynced(KeepFn keep) LOCKS_EXCLUDED(mu_);
  // Undoes `undo[from, to)` of the file at `path`, newest first.
  Status RevertLocked(const std::string& path, const std::vector<Undo>& undo, size_t from,
                      size_t to) EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;

  mutable Mutex mu_;
  bool active_ GUARDED_BY(mu_) = true;
  std::vector<Fault> faults_ GUARDED_BY(mu_);
  std::array<uint64_t, kNumFaultOps> op_counts_ GUARDED_BY(mu_){};
  std::array<uint64_t, kNumFaultOps> injected_counts_ GUARDED_BY(mu_){};
  // Keyed by normalized path. Holds every file written through this object
  // that has unsynced changes, is not durably named, or is open for writing.
  std::map<std::string, std::shared_ptr<FileState>> files_ GUARDED_BY(mu_);
};

}  // namespace strata

#endif  // STRATA_COMMON_FAULT_INJECTION_FS_H_
