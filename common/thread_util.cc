#include "common/thread_util.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace strata {

void SetCurrentThreadName(const char* name) {
  char cut[16];
  std::strncpy(cut, name, sizeof(cut) - 1);
  cut[sizeof(cut) - 1] = '\0';
  (void)pthread_setname_np(pthread_self(), cut);
}

Status SetCurrentThreadNice(int nice) {
  // On Linux the nice value belongs to the thread: PRIO_PROCESS with a
  // thread id changes that thread alone.
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, tid, nice) != 0) {
    return Status::IOError("setpriority(" + std::to_string(nice) + "): " + std::strerror(errno));
  }
  return Status::OK();
}

Status SetCurrentThreadBatchScheduling() {
  // pid 0: the calling thread (Linux schedules threads, not processes).
  const int policy = sched_getscheduler(0);
  if (policy != SCHED_OTHER) {
    // Real-time, idle or batch already: moving it would raise or lower it
    // against the rest of the process, which chose that policy.
    return Status::FailedPrecondition("thread runs under scheduling policy " +
                                      std::to_string(policy) + "; left as it is");
  }
  sched_param param{};
  param.sched_priority = 0;  // the only one SCHED_BATCH takes
  if (sched_setscheduler(0, SCHED_BATCH, &param) != 0) {
    return Status::IOError(std::string("sched_setscheduler(SCHED_BATCH): ") + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace strata
