#include "wal/internal/segment_io.h"

#include <liburing.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace strata::wal {

namespace {

constexpr size_t kPageSize = 4096;
constexpr unsigned kQueueDepth = 8;
// One write op moves at most this much; longer writes are split (the kernel
// would return a short write anyway).
constexpr size_t kMaxWriteOp = size_t{1} << 30;
constexpr uint64_t kWriteTag = 1;
constexpr uint64_t kSyncTag = 2;

char* AllocateBuffer(size_t* capacity) {
  *capacity = (*capacity + kPageSize - 1) / kPageSize * kPageSize;
  if (*capacity == 0) *capacity = kPageSize;
  return static_cast<char*>(std::aligned_alloc(kPageSize, *capacity));
}

Status Annotate(const Status& s, const char* op, const std::string& path, uint64_t offset) {
  if (s.ok()) return s;
  return s.WithContext(std::string("log ") + op + " " + path + " at offset " +
                       std::to_string(offset));
}

Status WriteThroughFile(WritableFile* file, const std::string& path, uint64_t offset,
                        const char* data, size_t n, bool sync) {
  if (n > 0) {
    STRATA_RETURN_IF_ERROR(Annotate(file->WriteAt(offset, Slice(data, n)), "write", path, offset));
  }
  if (sync) STRATA_RETURN_IF_ERROR(Annotate(file->Sync(), "sync", path, offset + n));
  return Status::OK();
}

class FileSegmentIo final : public SegmentIo {
 public:
  explicit FileSegmentIo(size_t capacity) {
    capacity_ = capacity;
    buffer_ = AllocateBuffer(&capacity_);
  }
  ~FileSegmentIo() override { std::free(buffer_); }

  Status Write(WritableFile* file, const std::string& path, uint64_t offset, const char* data,
               size_t n, bool sync) override {
    return WriteThroughFile(file, path, offset, data, n, sync);
  }
  Status Sync(WritableFile* file, const std::string& path) override {
    return Annotate(file->Sync(), "sync", path, file->Size());
  }
  bool uses_io_uring() const override { return false; }
};

class UringSegmentIo final : public SegmentIo {
 public:
  static std::unique_ptr<SegmentIo> Create(size_t capacity, std::string* why) {
    std::unique_ptr<UringSegmentIo> io(new UringSegmentIo);
    // COOP_TASKRUN: completions are processed when the leader enters the
    // kernel to wait, instead of interrupting it; older kernels refuse the flag.
    int r = io_uring_queue_init(kQueueDepth, &io->ring_, IORING_SETUP_COOP_TASKRUN);
    if (r == -EINVAL) r = io_uring_queue_init(kQueueDepth, &io->ring_, 0);
    if (r < 0) {
      *why = std::string("io_uring_queue_init: ") + std::strerror(-r);
      return nullptr;
    }
    io->ring_ready_ = true;
    io->capacity_ = capacity;
    io->buffer_ = AllocateBuffer(&io->capacity_);
    if (io->buffer_ == nullptr) {
      *why = "cannot allocate the group buffer";
      return nullptr;
    }
    struct iovec v {
      io->buffer_, io->capacity_
    };
    // Without a registered buffer (RLIMIT_MEMLOCK too small, say) writes use
    // plain IORING_OP_WRITE; nothing else changes.
    io->registered_ = io_uring_register_buffers(&io->ring_, &v, 1) == 0;
    return io;
  }

  ~UringSegmentIo() override {
    if (ring_ready_) io_uring_queue_exit(&ring_);
    std::free(buffer_);
  }

  Status Write(WritableFile* file, const std::string& path, uint64_t offset, const char* data,
               size_t n, bool sync) override {
    const int fd = file->fd();
    // A write with no fdatasync behind it is a copy into the page cache: a
    // plain pwritev does it in the caller's thread, where the ring would often
    // hand it to a kernel worker and add a wakeup to every unsynced group.
    if (fd < 0 || !sync) return WriteThroughFile(file, path, offset, data, n, sync);
    size_t done = 0;
    // Each round submits what is left of the write, linked to the fdatasync,
    // with one io_uring_enter. A short write breaks the link: the kernel
    // cancels the fdatasync (-ECANCELED) and the next round resubmits both.
    for (int round = 0;; round++) {
      if (round > 1000) {
        return Status::IOError("log write " + path + " at offset " + std::to_string(offset + done) +
                               ": no progress after 1000 tries");
      }
      unsigned submitted = 0;
      if (done < n) {
        const char* p = data + done;
        const size_t len = std::min(n - done, kMaxWriteOp);
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (registered_ && p >= buffer_ && p + len <= buffer_ + capacity_) {
          io_uring_prep_write_fixed(sqe, fd, p, static_cast<unsigned>(len), offset + done, 0);
        } else {
          io_uring_prep_write(sqe, fd, p, static_cast<unsigned>(len), offset + done);
        }
        io_uring_sqe_set_data64(sqe, kWriteTag);
        if (sync) sqe->flags |= IOSQE_IO_LINK;
        submitted++;
      }
      if (sync) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
        io_uring_sqe_set_data64(sqe, kSyncTag);
        submitted++;
      }
      if (submitted == 0) return Status::OK();
      int write_res = INT_MIN;
      int sync_res = INT_MIN;
      STRATA_RETURN_IF_ERROR(SubmitAndReap(submitted, path, offset + done, &write_res, &sync_res));
      if (write_res != INT_MIN) {
        if (write_res < 0) return SegmentIoError("write", path, offset + done, -write_res);
        if (write_res == 0) {
          return Status::IOError("log write " + path + " at offset " +
                                 std::to_string(offset + done) + ": wrote nothing");
        }
        done += static_cast<size_t>(write_res);
      }
      // A write done in full (a round of a write longer than kMaxWriteOp,
      // say) ran its linked fdatasync: its error must count, since a later
      // fdatasync would not report it again.
      if (sync && sync_res < 0 && sync_res != -ECANCELED) {
        return SegmentIoError("fdatasync", path, offset + done, -sync_res);
      }
      if (done < n) continue;
      if (sync && sync_res == -ECANCELED) continue;  // the write completed; sync on its own
      return Status::OK();
    }
  }

  Status Sync(WritableFile* file, const std::string& path) override {
    if (file->fd() < 0) return Annotate(file->Sync(), "sync", path, file->Size());
    return Write(file, path, file->Size(), nullptr, 0, /*sync=*/true);
  }

  bool uses_io_uring() const override { return true; }
  bool buffer_registered() const override { return registered_; }

 private:
  UringSegmentIo() = default;

  Status SubmitAndReap(unsigned n, const std::string& path, uint64_t offset, int* write_res,
                       int* sync_res) {
    int r = io_uring_submit_and_wait(&ring_, n);
    if (r < 0 || static_cast<unsigned>(r) != n) {
      // The ring cannot be trusted any more; the writer stops on this error.
      return Status::IOError(
          "log write " + path + " at offset " + std::to_string(offset) + ": io_uring_enter " +
          (r < 0 ? std::string(std::strerror(-r))
                 : "submitted " + std::to_string(r) + " of " + std::to_string(n)));
    }
    for (unsigned i = 0; i < n; i++) {
      io_uring_cqe* cqe = nullptr;
      int w;
      do {
        w = io_uring_wait_cqe(&ring_, &cqe);
      } while (w == -EINTR);
      if (w < 0) {
        return Status::IOError("log write " + path + " at offset " + std::to_string(offset) +
                               ": io_uring_wait_cqe " + std::strerror(-w));
      }
      if (io_uring_cqe_get_data64(cqe) == kWriteTag) {
        *write_res = cqe->res;
      } else {
        *sync_res = cqe->res;
      }
      io_uring_cqe_seen(&ring_, cqe);
    }
    return Status::OK();
  }

  io_uring ring_{};
  bool ring_ready_ = false;
  bool registered_ = false;
};

}  // namespace

Status SyncSegmentFile(WritableFile* file, const std::string& path, uint64_t end) {
  return Annotate(file->Sync(), "sync", path, end);
}

Status SegmentIoError(const char* op, const std::string& path, uint64_t offset, int err) {
  std::string msg = std::string("log ") + op + " " + path + " at offset " + std::to_string(offset) +
                    ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(msg);
  return Status::IOError(msg);
}

std::unique_ptr<SegmentIo> NewFileSegmentIo(size_t buffer_capacity) {
  return std::make_unique<FileSegmentIo>(buffer_capacity);
}

std::unique_ptr<SegmentIo> NewUringSegmentIo(size_t buffer_capacity, std::string* why) {
  return UringSegmentIo::Create(buffer_capacity, why);
}

}  // namespace strata::wal
