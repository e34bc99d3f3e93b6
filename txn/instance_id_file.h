// The instance-id file of the liveness registry: the id of the last instance
// opened in a directory. Format: txn/FORMAT.md, "The instance-id file".
//
// The file is small and written only when a registry opens, so it is always
// replaced whole (a temporary file, synced, renamed over it, directory
// synced): a reader sees the old record or the new one, never a mix.
//
// Pure functions over a FileSystem; thread-safe as far as the file system is,
// but two writers of one file must be serialized by the caller (the registry
// holds a lock file).
#ifndef STRATA_TXN_INSTANCE_ID_FILE_H_
#define STRATA_TXN_INSTANCE_ID_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::txn {

// DO NOT CHANGE: stored on disk.
constexpr uint16_t kInstanceIdFormatVersion = 1;
constexpr size_t kInstanceIdFileSize = 20;

// The file image holding `instance_id`.
std::string EncodeInstanceIdFile(uint64_t instance_id);
// Decodes a file image. Corruption for a damaged image (`path` names the file
// in the message), NotSupported for an intact image of an unknown version.
Status DecodeInstanceIdFile(const Slice& contents, const std::string& path, uint64_t* instance_id);

// The id stored at `path`, or 0 when the file does not exist.
Result<uint64_t> ReadInstanceIdFile(FileSystem* fs, const std::string& path);
// Durably replaces the file at `path` with one holding `instance_id`.
Status WriteInstanceIdFile(FileSystem* fs, const std::string& path, uint64_t instance_id);

}  // namespace strata::txn

#endif  // STRATA_TXN_INSTANCE_ID_FILE_H_
