// Naming the calling thread and lowering its CPU priority or changing its
// scheduling policy (Linux).
//
// Thread-safe: each call affects only the calling thread.
#ifndef STRATA_COMMON_THREAD_UTIL_H_
#define STRATA_COMMON_THREAD_UTIL_H_

#include "strata/status.h"

namespace strata {

// Names the calling thread as `top -H`, /proc/<pid>/task/<tid>/comm and
// debuggers show it; names longer than 15 bytes are cut. Best effort.
void SetCurrentThreadName(const char* name);

// Sets the calling thread's nice value (0 to 19; higher runs later when CPUs
// are busy). Raising it needs no privilege; lowering it again may.
Status SetCurrentThreadNice(int nice);

// Moves the calling thread from SCHED_OTHER to SCHED_BATCH, keeping its nice
// value: when it wakes it does not preempt the thread running on its CPU.
// That move needs no privilege. A thread under any other policy (real-time,
// idle, batch) is left as it is: FailedPrecondition.
Status SetCurrentThreadBatchScheduling();

}  // namespace strata

#endif  // STRATA_COMMON_THREAD_UTIL_H_
