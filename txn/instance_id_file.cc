// The instance-id file; the format is described in txn/FORMAT.md.
#include "txn/instance_id_file.h"

#include <cstring>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::txn {
namespace {

// DO NOT CHANGE: stored on disk.
constexpr char kMagic[4] = {'S', 'T', 'I', 'N'};
constexpr uint64_t kChecksumSeed = 0x5354494e;  // "STIN"
constexpr size_t kChecksummedBytes = 16;

}  // namespace

std::string EncodeInstanceIdFile(uint64_t instance_id) {
  std::string r(kMagic, sizeof(kMagic));
  PutFixed16(&r, kInstanceIdFormatVersion);
  PutFixed16(&r, 0);  // reserved
  PutFixed64(&r, instance_id);
  PutFixed32(&r, Checksum32(r.data(), kChecksummedBytes, kChecksumSeed));
  return r;
}

Status DecodeInstanceIdFile(const Slice& contents, const std::string& path, uint64_t* instance_id) {
  if (contents.size() != kInstanceIdFileSize) {
    return Status::Corruption(path + ": instance-id file is " + std::to_string(contents.size()) +
                              " bytes, expected " + std::to_string(kInstanceIdFileSize));
  }
  const char* p = contents.data();
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0 ||
      !ChecksumMatches(DecodeFixed32(p + kChecksummedBytes),
                       Checksum32(p, kChecksummedBytes, kChecksumSeed))) {
    return Status::Corruption(path + ": instance-id file has a bad magic or checksum");
  }
  const uint16_t version = DecodeFixed16(p + 4);
  if (version != kInstanceIdFormatVersion) {
    return Status::NotSupported(path + ": instance-id file format version " +
                                std::to_string(version) + ", this build reads " +
                                std::to_string(kInstanceIdFormatVersion));
  }
  if (DecodeFixed16(p + 6) != 0) {
    return Status::Corruption(path + ": instance-id file reserved field (offset 6) is not zero");
  }
  *instance_id = DecodeFixed64(p + 8);
  return Status::OK();
}

Result<uint64_t> ReadInstanceIdFile(FileSystem* fs, const std::string& path) {
  if (!fs->FileExists(path)) return uint64_t{0};
  std::string contents;
  STRATA_RETURN_IF_ERROR(ReadFileToString(fs, path, &contents));
  uint64_t id = 0;
  STRATA_RETURN_IF_ERROR(DecodeInstanceIdFile(contents, path, &id));
  return id;
}

Status WriteInstanceIdFile(FileSystem* fs, const std::string& path, uint64_t instance_id) {
  return WriteFileAtomically(fs, path, EncodeInstanceIdFile(instance_id));
}

}  // namespace strata::txn
