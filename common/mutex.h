// Mutex, MutexLock and CondVar: thin wrappers over the standard ones that carry
// clang thread-safety annotations, so GUARDED_BY and friends are checked in the
// clang build (-Wthread-safety). SharedGate: a reader/writer lock that
// prefers writers.
//
// Thread-safe, as their names say.
#ifndef STRATA_COMMON_MUTEX_H_
#define STRATA_COMMON_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <pthread.h>

#if defined(__clang__)
#define STRATA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STRATA_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) STRATA_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY STRATA_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) STRATA_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) STRATA_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRE(...) STRATA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) STRATA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) STRATA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUSIVE_LOCKS_REQUIRED(...) STRATA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define LOCKS_EXCLUDED(...) STRATA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_EXCLUSIVE_LOCK(...) STRATA_THREAD_ANNOTATION(assert_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS STRATA_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace strata {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void AssertHeld() ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // REQUIRES: mu is held. Releases it while waiting and holds it again on return.
  // Not annotated: the analysis cannot tell that the caller's mutex is the one
  // this CondVar was built with, so an annotation here would warn at every
  // correct call site.
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait(), for at most `micros`; returns false on timeout.
  bool WaitFor(int64_t micros) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    bool woke = cv_.wait_for(lock, std::chrono::microseconds(micros)) == std::cv_status::no_timeout;
    lock.release();
    return woke;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* const mu_;
  std::condition_variable cv_;
};

// A reader/writer lock whose writer, once waiting, gets in before any reader
// that comes after it (std::shared_mutex on glibc lets a steady stream of
// readers starve a writer). Usable with std::shared_lock and std::unique_lock.
// A thread must not take it shared twice: a writer waiting in between would
// deadlock it.
class SharedGate {
 public:
  SharedGate() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&rw_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  ~SharedGate() { pthread_rwlock_destroy(&rw_); }
  SharedGate(const SharedGate&) = delete;
  SharedGate& operator=(const SharedGate&) = delete;

  void lock() { pthread_rwlock_wrlock(&rw_); }
  void unlock() { pthread_rwlock_unlock(&rw_); }
  void lock_shared() { pthread_rwlock_rdlock(&rw_); }
  void unlock_shared() { pthread_rwlock_unlock(&rw_); }

 private:
  pthread_rwlock_t rw_;
};

}  // namespace strata

#endif  // STRATA_COMMON_MUTEX_H_
