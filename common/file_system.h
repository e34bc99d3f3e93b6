// File-system helpers on top of the FileSystem interface
// (strata/file_system.h, public): whole-file reads, atomic replacement, path
// joining. The POSIX implementation is posix_file_system.cc; tests swap in a
// fault-injecting one (fault_injection_fs.h) that fails chosen calls or
// forgets everything not yet synced.
//
// Thread-safe as the FileSystem they are given.
#ifndef STRATA_COMMON_FILE_SYSTEM_H_
#define STRATA_COMMON_FILE_SYSTEM_H_

#include <string>

#include "strata/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata {

// Reads the whole file into *data.
Status ReadFileToString(FileSystem* fs, const std::string& path, std::string* data);
// Writes data to path atomically: a temporary file, synced, renamed over path,
// and the directory synced.
Status WriteFileAtomically(FileSystem* fs, const std::string& path, const Slice& data);

// "dir/name".
std::string JoinPath(const std::string& dir, const std::string& name);
// The directory part of a path ("." when it has none).
std::string DirName(const std::string& path);

}  // namespace strata

#endif  // STRATA_COMMON_FILE_SYSTEM_H_
