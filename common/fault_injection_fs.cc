#include "common/fault_injection_fs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace strata {
namespace {

// Collapses repeated slashes and drops a trailing one, so that "d//f" and
// "d/f", or "d/" and "d", name the same entry in the bookkeeping.
std::string NormalizePath(const std::string& path) {
  std::string r;
  r.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !r.empty() && r.back() == '/') continue;
    r.push_back(c);
  }
  if (r.size() > 1 && r.back() == '/') r.pop_back();
  return r;
}

Status InjectedError(int err, const char* what, const std::string& path) {
  std::string msg = std::string(what) + " " + path + ": injected fault: " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(msg);
  return Status::IOError(msg);
}

Status InvalidatedError(const char* what, const std::string& path) {
  return Status::IOError(std::string(what) + " " + path +
                         ": file handle invalidated by a simulated power loss");
}

// Reads [offset, offset + n) of `path` through `fs`; fewer bytes at end of file.
Status ReadRange(FileSystem* fs, const std::string& path, uint64_t offset, uint64_t n,
                 std::string* out) {
  out->clear();
  if (n == 0) return Status::OK();
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewRandomAccessFile(path, &file));
  out->resize(n);
  Slice got;
  STRATA_RETURN_IF_ERROR(file->Read(offset, n, &got, out->data()));
  if (got.data() != out->data()) std::memmove(out->data(), got.data(), got.size());
  out->resize(got.size());
  return Status::OK();
}

Status ReadRange(const RandomAccessFile& file, uint64_t offset, uint64_t n, std::string* out) {
  out->clear();
  if (n == 0) return Status::OK();
  out->resize(n);
  Slice got;
  STRATA_RETURN_IF_ERROR(file.Read(offset, n, &got, out->data()));
  if (got.data() != out->data()) std::memmove(out->data(), got.data(), got.size());
  out->resize(got.size());
  return Status::OK();
}

}  // namespace

const char* FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kOpen:
      return "open";
    case FaultOp::kWrite:
      return "write";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kAllocate:
      return "allocate";
    case FaultOp::kTruncate:
      return "truncate";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kDelete:
      return "delete";
    case FaultOp::kSyncDir:
      return "syncdir";
    case FaultOp::kRead:
      return "read";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// File wrappers
// ---------------------------------------------------------------------------

class FaultInjectionFileSystem::FaultSequentialFile final : public SequentialFile {
 public:
  FaultSequentialFile(FaultInjectionFileSystem* fs, std::string path,
                      std::unique_ptr<SequentialFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  Status Read(size_t n, Slice* result, char* scratch) override {
    STRATA_RETURN_IF_ERROR(fs_->CheckFault(FaultOp::kRead, "read", path_, /*mutating=*/false));
    return base_->Read(n, result, scratch);
  }
  Status Skip(uint64_t n) override { return base_->Skip(n); }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const std::unique_ptr<SequentialFile> base_;
};

class FaultInjectionFileSystem::FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultInjectionFileSystem* fs, std::string path,
                        std::unique_ptr<RandomAccessFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    STRATA_RETURN_IF_ERROR(fs_->CheckFault(FaultOp::kRead, "pread", path_, /*mutating=*/false));
    return base_->Read(offset, n, result, scratch);
  }
  Result<uint64_t> Size() const override { return base_->Size(); }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const std::unique_ptr<RandomAccessFile> base_;
};

// Every mutating call runs under the file system's mutex, so that the undo
// record and the change it undoes are one step as far as DropUnsyncedData is
// concerned. Sync drops the mutex around the (slow) fdatasync.
class FaultInjectionFileSystem::FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionFileSystem* fs, std::shared_ptr<FileState> state,
                    std::unique_ptr<WritableFile> base, std::unique_ptr<RandomAccessFile> reader)
      : fs_(fs), state_(std::move(state)), base_(std::move(base)), reader_(std::move(reader)) {}

  Status Append(const Slice& data) override {
    MutexLock l(&fs_->mu_);
    STRATA_RETURN_IF_ERROR(Check(FaultOp::kWrite, "append"));
    if (data.empty()) return Status::OK();
    const uint64_t old_size = base_->Size();
    state_->undo.push_back(Undo{old_size, data.size(), old_size, {}});
    // Written at once, never parked in the base file's buffer: a crash loses
    // or keeps exactly what the undo log says, and a Sync running on another
    // thread has no buffer to race with.
    return base_->WriteAt(old_size, data);
  }

  Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) override {
    MutexLock l(&fs_->mu_);
    STRATA_RETURN_IF_ERROR(Check(FaultOp::kWrite, "write"));
    uint64_t len = 0;
    for (int i = 0; i < iovcnt; i++) len += iov[i].iov_len;
    if (len == 0) return Status::OK();
    const uint64_t old_size = base_->Size();
    Undo undo{offset, len, old_size, {}};
    if (offset < old_size) {
      const uint64_t overlap = std::min(len, old_size - offset);
      Status s = ReadRange(*reader_, offset, overlap, &undo.old_bytes);
      if (!s.ok()) return s.WithContext("saving bytes to be overwritten");
    }
    state_->undo.push_back(std::move(undo));
    return base_->WriteAt(offset, iov, iovcnt);
  }

  Status Flush() override {
    MutexLock l(&fs_->mu_);
    STRATA_RETURN_IF_ERROR(Check(FaultOp::kWrite, "flush"));
    return base_->Flush();
  }

  Status Sync() override {
    size_t synced;
    {
      MutexLock l(&fs_->mu_);
      STRATA_RETURN_IF_ERROR(Check(FaultOp::kSync, "sync"));
      synced = state_->undo.size();
    }
    STRATA_RETURN_IF_ERROR(base_->Sync());
    MutexLock l(&fs_->mu_);
    if (state_->invalidated) return InvalidatedError("sync", state_->path);
    // Changes made while the mutex was dropped (the log writer writes on
    // while an fdatasync runs, with LogOptions::apply_before_sync) may not be
    // covered: they stay in the undo log, as if this sync had missed them.
    state_->undo.erase(state_->undo.begin(), state_->undo.begin() + static_cast<ptrdiff_t>(synced));
    return Status::OK();
  }

  Status Allocate(uint64_t offset, uint64_t len) override {
    MutexLock l(&fs_->mu_);
    STRATA_RETURN_IF_ERROR(Check(FaultOp::kAllocate, "allocate"));
    const uint64_t old_size = base_->Size();
    if (offset + len > old_size) state_->undo.push_back(Undo{old_size, 0, old_size, {}});
    return base_->Allocate(offset, len);
  }

  Status Truncate(uint64_t size) override {
    MutexLock l(&fs_->mu_);
    STRATA_RETURN_IF_ERROR(Check(FaultOp::kTruncate, "truncate"));
    const uint64_t old_size = base_->Size();
    if (size != old_size) {
      Undo undo{std::min(size, old_size), 0, old_size, {}};
      if (size < old_size) {
        Status s = ReadRange(*reader_, size, old_size - size, &undo.old_bytes);
        if (!s.ok()) return s.WithContext("saving bytes to be truncated");
      }
      state_->undo.push_back(std::move(undo));
    }
    return base_->Truncate(size);
  }

  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }
  // fd() stays -1 (the default): every write must come through here.

 private:
  Status Check(FaultOp op, const char* what) EXCLUSIVE_LOCKS_REQUIRED(fs_->mu_) {
    if (state_->invalidated) return InvalidatedError(what, state_->path);
    return fs_->CheckFaultLocked(op, what, state_->path, /*mutating=*/true);
  }

  FaultInjectionFileSystem* const fs_;
  // Guarded by fs_->mu_ (the pointer itself is constant).
  const std::shared_ptr<FileState> state_;
  const std::unique_ptr<WritableFile> base_;
  // The same inode opened for reading, to save bytes before they are overwritten.
  const std::unique_ptr<RandomAccessFile> reader_;
};

// ---------------------------------------------------------------------------
// Faults and counters
// ---------------------------------------------------------------------------

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base)
    : base_(base != nullptr ? base : FileSystem::Default()) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

void FaultInjectionFileSystem::FailAfter(FaultOp op, int skip, int count, int err,
                                         const std::string& path_filter) {
  Fault f;
  f.op = op;
  f.err = err;
  f.path_filter = path_filter;
  f.skip = skip < 0 ? 0 : skip;
  f.count = count;
  MutexLock l(&mu_);
  faults_.push_back(std::move(f));
}

void FaultInjectionFileSystem::FailRandomly(FaultOp op, double probability, uint64_t seed, int err,
                                            const std::string& path_filter) {
  Fault f;
  f.op = op;
  f.err = err;
  f.path_filter = path_filter;
  f.probability = probability;
  f.random = std::make_unique<Random>(seed);
  MutexLock l(&mu_);
  faults_.push_back(std::move(f));
}

void FaultInjectionFileSystem::ClearFaults(FaultOp op) {
  MutexLock l(&mu_);
  std::erase_if(faults_, [op](const Fault& f) { return f.op == op; });
}

void FaultInjectionFileSystem::ClearFaults() {
  MutexLock l(&mu_);
  faults_.clear();
}

void FaultInjectionFileSystem::SetFilesystemActive(bool active) {
  MutexLock l(&mu_);
  active_ = active;
}

bool FaultInjectionFileSystem::IsFilesystemActive() const {
  MutexLock l(&mu_);
  return active_;
}

uint64_t FaultInjectionFileSystem::OpCount(FaultOp op) const {
  MutexLock l(&mu_);
  return op_counts_[static_cast<int>(op)];
}

uint64_t FaultInjectionFileSystem::InjectedCount(FaultOp op) const {
  MutexLock l(&mu_);
  return injected_counts_[static_cast<int>(op)];
}

void FaultInjectionFileSystem::ResetCounters() {
  MutexLock l(&mu_);
  op_counts_.fill(0);
  injected_counts_.fill(0);
}

Status FaultInjectionFileSystem::CheckFault(FaultOp op, const char* what, const std::string& path,
                                            bool mutating) {
  MutexLock l(&mu_);
  return CheckFaultLocked(op, what, path, mutating);
}

Status FaultInjectionFileSystem::CheckFaultLocked(FaultOp op, const char* what,
                                                  const std::string& path, bool mutating) {
  const int i = static_cast<int>(op);
  op_counts_[i]++;
  if (mutating && !active_) {
    injected_counts_[i]++;
    return InactiveError(what, path);
  }
  Status result;
  for (Fault& f : faults_) {
    if (f.op != op) continue;
    if (!f.path_filter.empty() && path.find(f.path_filter) == std::string::npos) continue;
    bool fail;
    if (f.random != nullptr) {
      // 53 random bits as a double in [0, 1).
      const double u = static_cast<double>(f.random->Next64() >> 11) * 0x1.0p-53;
      fail = u < f.probability;
    } else if (f.skip > 0) {
      f.skip--;
      fail = false;
    } else {
      fail = f.count != 0;
      if (f.count > 0) f.count--;
    }
    if (fail && result.ok()) result = InjectedError(f.err, what, path);
  }
  std::erase_if(faults_,
                [](const Fault& f) { return f.random == nullptr && f.skip == 0 && f.count == 0; });
  if (!result.ok()) injected_counts_[i]++;
  return result;
}

Status FaultInjectionFileSystem::InactiveError(const char* what, const std::string& path) {
  return Status::IOError(std::string(what) + " " + path + ": injected crash: file system inactive");
}

// ---------------------------------------------------------------------------
// Power loss
// ---------------------------------------------------------------------------

std::shared_ptr<FaultInjectionFileSystem::FileState> FaultInjectionFileSystem::StateFor(
    const std::string& path) {
  const std::string key = NormalizePath(path);
  auto it = files_.find(key);
  if (it != files_.end()) return it->second;
  auto state = std::make_shared<FileState>();
  state->path = key;
  files_.emplace(key, state);
  return state;
}

Status FaultInjectionFileSystem::RevertLocked(const std::string& path,
                                              const std::vector<Undo>& undo, size_t from,
                                              size_t to) {
  if (from >= to) return Status::OK();
  std::unique_ptr<WritableFile> file;
  FileOpenOptions options;
  options.truncate = false;
  STRATA_RETURN_IF_ERROR(base_->NewWritableFile(path, options, &file));
  for (size_t i = to; i-- > from;) {
    const Undo& u = undo[i];
    if (!u.old_bytes.empty()) STRATA_RETURN_IF_ERROR(file->WriteAt(u.offset, u.old_bytes));
    STRATA_RETURN_IF_ERROR(file->Truncate(u.old_size));
  }
  return file->Close();
}

template <typename KeepFn>
Status FaultInjectionFileSystem::ResetUnsynced(KeepFn keep) {
  MutexLock l(&mu_);
  Status result;
  auto note = [&result](Status s) {
    if (result.ok() && !s.ok()) result = std::move(s);
  };
  for (auto& [path, state] : files_) {
    if (!base_->FileExists(path)) {
      // Removed behind this object's back: nothing to restore.
    } else if (state->new_entry) {
      // The directory entry never became durable: the file is gone.
      Status s = base_->DeleteFile(path);
      if (!s.IsNotFound()) note(std::move(s));
    } else if (!state->undo.empty()) {
      const std::vector<Undo>& undo = state->undo;
      size_t last = undo.size();  // the last change that wrote data
      for (size_t i = undo.size(); i-- > 0;) {
        if (undo[i].new_len > 0) {
          last = i;
          break;
        }
      }
      const uint64_t keep_len = last < undo.size() ? keep(undo[last].new_len) : 0;
      if (keep_len == 0) {
        note(RevertLocked(path, undo, 0, undo.size()));
      } else {
        // Roll back to just after the torn write, save its surviving prefix,
        // roll back the rest, and put the prefix back.
        Status s = RevertLocked(path, undo, last + 1, undo.size());
        std::string prefix;
        if (s.ok()) s = ReadRange(base_, path, undo[last].offset, keep_len, &prefix);
        if (s.ok()) s = RevertLocked(path, undo, 0, last + 1);
        std::unique_ptr<WritableFile> file;
        FileOpenOptions options;
        options.truncate = false;
        if (s.ok()) s = base_->NewWritableFile(path, options, &file);
        if (s.ok()) s = file->WriteAt(undo[last].offset, prefix);
        if (s.ok()) s = file->Close();
        note(std::move(s));
      }
    }
    state->invalidated = true;
    state->detached = true;
  }
  // Everything on disk now counts as durable; handles opened before are dead.
  files_.clear();
  return result;
}

Status FaultInjectionFileSystem::DropUnsyncedData() {
  return ResetUnsynced([](uint64_t) -> uint64_t { return 0; });
}

Status FaultInjectionFileSystem::TearUnsyncedData(Random* rnd) {
  return ResetUnsynced([rnd](uint64_t len) -> uint64_t { return rnd->Uniform(len); });
}

Status FaultInjectionFileSystem::TearUnsyncedData(uint64_t keep_bytes) {
  return ResetUnsynced([keep_bytes](uint64_t len) { return std::min(len, keep_bytes); });
}

std::vector<std::string> FaultInjectionFileSystem::UnsyncedFiles() const {
  MutexLock l(&mu_);
  std::vector<std::string> r;
  for (const auto& [path, state] : files_) {
    if (state->new_entry || !state->undo.empty()) r.push_back(path);
  }
  return r;
}

// ---------------------------------------------------------------------------
// FileSystem
// ---------------------------------------------------------------------------

Status FaultInjectionFileSystem::NewSequentialFile(const std::string& path,
                                                   std::unique_ptr<SequentialFile>* result) {
  STRATA_RETURN_IF_ERROR(CheckFault(FaultOp::kOpen, "open", path, /*mutating=*/false));
  std::unique_ptr<SequentialFile> file;
  STRATA_RETURN_IF_ERROR(base_->NewSequentialFile(path, &file));
  *result = std::make_unique<FaultSequentialFile>(this, path, std::move(file));
  return Status::OK();
}

Status FaultInjectionFileSystem::NewRandomAccessFile(const std::string& path,
                                                     std::unique_ptr<RandomAccessFile>* result) {
  STRATA_RETURN_IF_ERROR(CheckFault(FaultOp::kOpen, "open", path, /*mutating=*/false));
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(base_->NewRandomAccessFile(path, &file));
  *result = std::make_unique<FaultRandomAccessFile>(this, path, std::move(file));
  return Status::OK();
}

Status FaultInjectionFileSystem::NewWritableFile(const std::string& path,
                                                 const FileOpenOptions& options,
                                                 std::unique_ptr<WritableFile>* result) {
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(CheckFaultLocked(FaultOp::kOpen, "open", path, /*mutating=*/true));
  const bool existed = base_->FileExists(path);
  // Truncating an existing file is a change like any other: keep the bytes so
  // a power loss before the next Sync can bring them back.
  std::string old_contents;
  if (existed && options.truncate) {
    Status s = ReadFileToString(base_, path, &old_contents);
    if (!s.ok()) return s.WithContext("saving contents to be truncated");
  }
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(base_->NewWritableFile(path, options, &file));
  std::unique_ptr<RandomAccessFile> reader;
  STRATA_RETURN_IF_ERROR(base_->NewRandomAccessFile(path, &reader));
  std::shared_ptr<FileState> state = StateFor(path);
  if (!existed) state->new_entry = true;
  if (!old_contents.empty()) {
    const uint64_t old_size = old_contents.size();
    state->undo.push_back(Undo{0, 0, old_size, std::move(old_contents)});
  }
  *result = std::make_unique<FaultWritableFile>(this, std::move(state), std::move(file),
                                                std::move(reader));
  return Status::OK();
}

bool FaultInjectionFileSystem::FileExists(const std::string& path) {
  return base_->FileExists(path);
}

Status FaultInjectionFileSystem::GetChildren(const std::string& dir,
                                             std::vector<std::string>* names) {
  return base_->GetChildren(dir, names);
}

Status FaultInjectionFileSystem::DeleteFile(const std::string& path) {
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(CheckFaultLocked(FaultOp::kDelete, "delete", path, /*mutating=*/true));
  STRATA_RETURN_IF_ERROR(base_->DeleteFile(path));
  auto it = files_.find(NormalizePath(path));
  if (it != files_.end()) {
    it->second->detached = true;
    files_.erase(it);
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(CheckFaultLocked(FaultOp::kRename, "rename", from, /*mutating=*/true));
  const bool target_existed = base_->FileExists(to);
  STRATA_RETURN_IF_ERROR(base_->RenameFile(from, to));
  const std::string from_key = NormalizePath(from);
  const std::string to_key = NormalizePath(to);
  if (from_key == to_key) return Status::OK();
  bool target_was_new = false;
  if (auto it = files_.find(to_key); it != files_.end()) {
    target_was_new = it->second->new_entry;
    it->second->detached = true;
    files_.erase(it);
  }
  if (auto it = files_.find(from_key); it != files_.end()) {
    std::shared_ptr<FileState> state = std::move(it->second);
    files_.erase(it);
    state->path = to_key;
    // A rename over an existing, durable file counts as durable, so that a
    // crash cannot leave neither file behind (see the header).
    state->new_entry = state->new_entry && (!target_existed || target_was_new);
    files_.emplace(to_key, std::move(state));
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::CreateDirIfMissing(const std::string& dir) {
  {
    MutexLock l(&mu_);
    if (!active_) return InactiveError("mkdir", dir);
  }
  return base_->CreateDirIfMissing(dir);
}

Status FaultInjectionFileSystem::DeleteDir(const std::string& dir) {
  STRATA_RETURN_IF_ERROR(CheckFault(FaultOp::kDelete, "rmdir", dir, /*mutating=*/true));
  return base_->DeleteDir(dir);
}

Result<uint64_t> FaultInjectionFileSystem::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  STRATA_RETURN_IF_ERROR(CheckFault(FaultOp::kSyncDir, "syncdir", dir, /*mutating=*/true));
  // Entries created while the directory is being synced may or may not be
  // covered; take the ones that existed before as covered.
  std::vector<std::shared_ptr<FileState>> covered;
  const std::string key = NormalizePath(dir);
  {
    MutexLock l(&mu_);
    for (const auto& [path, state] : files_) {
      if (state->new_entry && DirName(path) == key) covered.push_back(state);
    }
  }
  STRATA_RETURN_IF_ERROR(base_->SyncDir(dir));
  MutexLock l(&mu_);
  for (const auto& state : covered) {
    // Renamed to another directory meanwhile: that entry is not covered.
    if (!state->detached && DirName(state->path) == key) state->new_entry = false;
  }
  covered.clear();
  // Forget files with nothing left to lose and no open writer.
  std::erase_if(files_, [](const auto& entry) {
    const auto& state = entry.second;
    return state.use_count() == 1 && !state->new_entry && state->undo.empty();
  });
  return Status::OK();
}

Status FaultInjectionFileSystem::LockFile(const std::string& path,
                                          std::unique_ptr<FileLock>* lock) {
  return base_->LockFile(path, lock);
}

Status FaultInjectionFileSystem::UnlockFile(std::unique_ptr<FileLock> lock) {
  return base_->UnlockFile(std::move(lock));
}

}  // namespace strata
