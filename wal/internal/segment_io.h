// SegmentIo: how the log writer's group leader puts a framed group on disk.
// Two implementations: io_uring (a linked write -> fdatasync pair per call,
// submitted and reaped with one io_uring_enter, from a registered buffer when
// the group fits in it) and a fallback through WritableFile::WriteAt (pwritev)
// and WritableFile::Sync (fdatasync).
//
// Thread-compatible: only the current group leader calls it; leadership is
// handed over under the writer's mutex, which orders one leader's use before
// the next one's.
//
// Invariant: a successful Write(sync=true) returns only after the bytes and
// everything written to the file before them are durable; every failure names
// the file and the offset.
#ifndef STRATA_WAL_INTERNAL_SEGMENT_IO_H_
#define STRATA_WAL_INTERNAL_SEGMENT_IO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "strata/status.h"

namespace strata::wal {

class SegmentIo {
 public:
  virtual ~SegmentIo() = default;
  SegmentIo(const SegmentIo&) = delete;
  SegmentIo& operator=(const SegmentIo&) = delete;

  // Writes data[0, n) at `offset` of `file` (named `path` in errors) and, when
  // `sync`, makes the file durable (fdatasync) once the write is complete.
  virtual Status Write(WritableFile* file, const std::string& path, uint64_t offset,
                       const char* data, size_t n, bool sync) = 0;
  // fdatasync only.
  virtual Status Sync(WritableFile* file, const std::string& path) = 0;

  // Groups are framed here when they fit (capacity() bytes, page aligned); for
  // io_uring it is registered with the kernel, so writes from it skip the
  // per-call page pinning.
  char* buffer() const { return buffer_; }
  size_t capacity() const { return capacity_; }

  virtual bool uses_io_uring() const = 0;
  // True when buffer() is registered with the ring (writes from it use
  // IORING_OP_WRITE_FIXED).
  virtual bool buffer_registered() const { return false; }

 protected:
  SegmentIo() = default;
  char* buffer_ = nullptr;
  size_t capacity_ = 0;
};

// The pwritev + fdatasync implementation through the FileSystem interface.
std::unique_ptr<SegmentIo> NewFileSegmentIo(size_t buffer_capacity);

// The io_uring implementation, or nullptr (with the reason in *why) when no
// ring can be set up. Files whose fd() is -1 are written through the
// FileSystem interface instead.
std::unique_ptr<SegmentIo> NewUringSegmentIo(size_t buffer_capacity, std::string* why);

// fdatasync of `file` through the file itself, never through a ring, so it
// may run while the leader writes through a SegmentIo (another part of the
// same file, or another file); `end`, where the synced bytes end, names the
// place in errors. Used by LogOptions::apply_before_sync.
Status SyncSegmentFile(WritableFile* file, const std::string& path, uint64_t end);

// The Status for an errno from a write or sync of `path` at `offset`:
// ResourceExhausted for ENOSPC and EDQUOT, IOError otherwise.
Status SegmentIoError(const char* op, const std::string& path, uint64_t offset, int err);

}  // namespace strata::wal

#endif  // STRATA_WAL_INTERNAL_SEGMENT_IO_H_
