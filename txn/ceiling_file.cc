// The ceiling file; the format is described in txn/FORMAT.md.
#include "txn/ceiling_file.h"

#include <cstring>
#include <utility>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::txn {
namespace {

// DO NOT CHANGE: stored on disk.
constexpr char kMagic[4] = {'S', 'T', 'C', 'L'};
constexpr uint64_t kChecksumSeed = 0x5354434c;  // "STCL"
constexpr size_t kChecksummedBytes = 16;

bool AllZero(const Slice& s) {
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != 0) return false;
  }
  return true;
}

}  // namespace

std::string CeilingFile::EncodeRecord(uint64_t ceiling) {
  std::string r(kMagic, sizeof(kMagic));
  PutFixed16(&r, kFormatVersion);
  PutFixed16(&r, 0);  // reserved
  PutFixed64(&r, ceiling);
  PutFixed32(&r, Checksum32(r.data(), kChecksummedBytes, kChecksumSeed));
  return r;
}

Status CeilingFile::DecodeRecord(const Slice& record, uint64_t* ceiling) {
  if (record.size() < kRecordSize) {
    return Status::Corruption("ceiling record: " + std::to_string(record.size()) + " bytes, need " +
                              std::to_string(kRecordSize));
  }
  const Slice r(record.data(), kRecordSize);
  if (AllZero(r)) return Status::NotFound("ceiling record: empty slot");
  const uint32_t stored = DecodeFixed32(r.data() + kChecksummedBytes);
  const uint32_t actual = Checksum32(r.data(), kChecksummedBytes, kChecksumSeed);
  if (stored != actual || std::memcmp(r.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption("ceiling record: bad magic or checksum");
  }
  const uint16_t version = DecodeFixed16(r.data() + 4);
  if (version != kFormatVersion) {
    return Status::NotSupported("ceiling record: format version " + std::to_string(version) +
                                ", this build reads " + std::to_string(kFormatVersion));
  }
  if (DecodeFixed16(r.data() + 6) != 0) {
    return Status::Corruption("ceiling record: reserved field is not zero");
  }
  *ceiling = DecodeFixed64(r.data() + 8);
  return Status::OK();
}

Status CeilingFile::DecodeFile(const Slice& contents, const std::string& path, uint64_t* ceiling,
                               int* slot) {
  if (contents.size() != kFileSize) {
    return Status::Corruption(path + ": ceiling file is " + std::to_string(contents.size()) +
                              " bytes, expected " + std::to_string(kFileSize));
  }
  bool found = false;
  std::string problems;
  for (int i = 0; i < kNumSlots; i++) {
    uint64_t value = 0;
    Status s = DecodeRecord(Slice(contents.data() + i * kSlotSize, kRecordSize), &value);
    if (s.IsNotSupported()) return s.WithContext(path + " offset " + std::to_string(i * kSlotSize));
    if (!s.ok()) {
      problems += " slot " + std::to_string(i) + " (offset " + std::to_string(i * kSlotSize) +
                  "): " + std::string(s.message()) + ";";
      continue;
    }
    if (!found || value > *ceiling) {
      *ceiling = value;
      *slot = i;
    }
    found = true;
  }
  if (!found) return Status::Corruption(path + ": no valid ceiling record:" + problems);
  return Status::OK();
}

Status CeilingFile::Open(FileSystem* fs, const std::string& path,
                         std::unique_ptr<CeilingFile>* result) {
  if (!fs->FileExists(path)) {
    std::string image(kFileSize, '\0');
    const std::string first = EncodeRecord(0);
    image.replace(0, first.size(), first);
    STRATA_RETURN_IF_ERROR(WriteFileAtomically(fs, path, image));
  }
  std::string contents;
  STRATA_RETURN_IF_ERROR(ReadFileToString(fs, path, &contents));
  uint64_t ceiling = 0;
  int slot = 0;
  STRATA_RETURN_IF_ERROR(DecodeFile(contents, path, &ceiling, &slot));
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(path, FileOpenOptions{.truncate = false}, &file));
  result->reset(new CeilingFile(path, std::move(file), ceiling, slot));
  return Status::OK();
}

CeilingFile::CeilingFile(std::string path, std::unique_ptr<WritableFile> file, uint64_t ceiling,
                         int slot)
    : path_(std::move(path)), file_(std::move(file)), ceiling_(ceiling), durable_slot_(slot) {}

CeilingFile::~CeilingFile() {
  file_->Close().PermitUncheckedError();  // nothing unsynced is relied upon
}

Status CeilingFile::Write(uint64_t ceiling) {
  const int slot = 1 - durable_slot_;
  const uint64_t offset = static_cast<uint64_t>(slot) * kSlotSize;
  Status s = file_->WriteAt(offset, EncodeRecord(ceiling));
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    return s.WithContext(path_ + ": writing ceiling " + std::to_string(ceiling) + " at offset " +
                         std::to_string(offset));
  }
  ceiling_ = ceiling;
  durable_slot_ = slot;
  return Status::OK();
}

}  // namespace strata::txn
