// Recovery at open: the log replayed into the memtables of the catalog's
// tablets, past what each locality group already holds in files, and the
// manifest and the table directory brought in line with what the log holds.
// See "Recovery" in engine/README.md; the log's own recovery (torn tails,
// recovery modes) is wal/log_reader.h's.
//
// Runs once, before the engine is shared: not thread-safe.
#ifndef STRATA_ENGINE_RECOVERY_H_
#define STRATA_ENGINE_RECOVERY_H_

#include <string>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "engine/live_files.h"
#include "engine/version_set.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata::engine {

// Replays the log in `log_dir` (created when missing) from the manifest's
// log floor into the tablets of `versions`, recovered already, applying
// `mode` to a damaged tail. Then deletes table files the manifest does not
// list, records a raised log floor when the log holds no record, and sets
// *next to the sequence number the log writer continues at. Corruption when
// the manifest names a newest segment that is gone (unless `mode` is
// kPointInTime), when a record names an unknown tablet or family, or when
// the log misses records the manifest needs.
Status RecoverTablets(FileSystem* fs, const std::string& log_dir, WalRecoveryMode mode,
                      VersionSet* versions, LiveFiles* files, SequenceNumber* next);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_RECOVERY_H_
