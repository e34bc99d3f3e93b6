// GatedSyncFileSystem: a test double that holds fdatasyncs until the test
// lets them go, or fails one.
//
// Thread-safe.
#ifndef STRATA_TESTS_UTIL_GATED_SYNC_FS_H_
#define STRATA_TESTS_UTIL_GATED_SYNC_FS_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "util/fake_clock.h"
#include "util/forwarding_fs.h"

namespace strata::test {

// A FileSystem whose writable files have no descriptor (the fallback path)
// and whose Syncs, once Hold() is called, wait for a permit: a test can keep
// a group in its fdatasync for as long as it likes. Each Sync also moves
// `clock` (when given) 100 s on, so the writer believes syncs are slow.
class GatedSyncFileSystem final : public ForwardingFileSystem {
 public:
  explicit GatedSyncFileSystem(FakeClock* clock = nullptr) : clock_(clock) {}

  void Hold() {
    std::lock_guard<std::mutex> l(mu_);
    held_ = true;
  }
  void Permit(int n) {
    std::lock_guard<std::mutex> l(mu_);
    permits_ += n;
    cv_.notify_all();
  }
  // The next Sync that gets a permit fails with EIO.
  void FailNextPermitted() {
    std::lock_guard<std::mutex> l(mu_);
    fail_next_ = true;
  }
  // Syncs since Hold(), waiting for a permit or through.
  int gated() {
    std::lock_guard<std::mutex> l(mu_);
    return gated_;
  }
  // Waits until `n` Syncs in all are waiting for a permit or went through one.
  void AwaitGatedSyncs(int n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return gated_ >= n; });
  }

 protected:
  std::unique_ptr<WritableFile> WrapWritable(const std::string&,
                                             std::unique_ptr<WritableFile> file) override {
    return std::make_unique<File>(std::move(file), this);
  }

 private:
  class File final : public ForwardingWritableFile {
   public:
    File(std::unique_ptr<WritableFile> base, GatedSyncFileSystem* fs)
        : ForwardingWritableFile(std::move(base)), fs_(fs) {}
    Status Sync() override {
      if (!fs_->Gate()) return Status::IOError("injected fdatasync failure");
      return base_->Sync();
    }
    int fd() const override { return -1; }

   private:
    GatedSyncFileSystem* const fs_;
  };

  // False: the Sync fails.
  bool Gate() {
    std::unique_lock<std::mutex> l(mu_);
    if (!held_) return true;
    gated_++;
    cv_.notify_all();
    cv_.wait(l, [&] { return permits_ > 0; });
    permits_--;
    if (clock_ != nullptr) clock_->Advance(100'000'000);
    const bool fail = fail_next_;
    fail_next_ = false;
    return !fail;
  }

  FakeClock* const clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool fail_next_ = false;
  int permits_ = 0;
  int gated_ = 0;
};

}  // namespace strata::test

#endif  // STRATA_TESTS_UTIL_GATED_SYNC_FS_H_
