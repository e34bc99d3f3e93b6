#include "common/thread_util.h"

#include <pthread.h>
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

}  // namespace strata
