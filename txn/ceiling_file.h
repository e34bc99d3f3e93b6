// CeilingFile: the timestamp oracle's persisted ceiling, an upper bound on
// every timestamp the oracle has handed out (or will hand out before it
// persists a higher one). Format: txn/FORMAT.md, "The ceiling file".
//
// The file has two fixed slots, each in its own 4 KiB block; a write goes to
// the slot that does not hold the last durable record, in place
// (WriteAt + fdatasync), so a write torn by a crash damages only the older
// record and the newer one survives in the other slot. Reading takes the
// highest ceiling among the valid slots.
//
// Thread-compatible: the oracle calls it under its refill mutex.
//
// Invariants:
//   * ceiling() is the value of the last record known durable: the highest
//     valid slot at Open, then the value of each successful Write.
//   * A Write never goes to the slot holding that record, and the slot
//     switches only after a successful Sync: after a failed write the same
//     (older) slot is written again, so at any moment one slot holds a
//     durable record >= ceiling().
#ifndef STRATA_TXN_CEILING_FILE_H_
#define STRATA_TXN_CEILING_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::txn {

class CeilingFile {
 public:
  // DO NOT CHANGE: stored on disk.
  static constexpr uint16_t kFormatVersion = 1;
  static constexpr size_t kRecordSize = 20;
  static constexpr size_t kSlotSize = 4096;
  static constexpr int kNumSlots = 2;
  static constexpr size_t kFileSize = kSlotSize * kNumSlots;

  // Opens the ceiling file at `path`, creating it with ceiling 0 (written to
  // a temporary file, synced, renamed, directory synced) when it is missing.
  // Corruption if the file has the wrong size or no valid slot; NotSupported
  // if a slot with a valid checksum has an unknown version.
  static Status Open(FileSystem* fs, const std::string& path, std::unique_ptr<CeilingFile>* result);

  ~CeilingFile();
  CeilingFile(const CeilingFile&) = delete;
  CeilingFile& operator=(const CeilingFile&) = delete;

  // The last durable ceiling.
  uint64_t ceiling() const { return ceiling_; }
  // The slot holding it (0 or 1).
  int durable_slot() const { return durable_slot_; }

  // Makes `ceiling` durable: writes it to the other slot and syncs. On error
  // ceiling() is unchanged and the next Write goes to the same slot.
  // REQUIRES: ceiling >= this->ceiling().
  Status Write(uint64_t ceiling);

  // ---- Format helpers (also used by tests) --------------------------------

  // The kRecordSize bytes of a slot holding `ceiling`.
  static std::string EncodeRecord(uint64_t ceiling);
  // Decodes the first kRecordSize bytes of a slot. NotFound if they are all
  // zero (a slot never written), Corruption if they are damaged, NotSupported
  // for a checksummed record of an unknown version.
  static Status DecodeRecord(const Slice& record, uint64_t* ceiling);
  // Decodes a whole file image: the highest valid slot's ceiling and its
  // index. `path` only names the file in messages.
  static Status DecodeFile(const Slice& contents, const std::string& path, uint64_t* ceiling,
                           int* slot);

 private:
  CeilingFile(std::string path, std::unique_ptr<WritableFile> file, uint64_t ceiling, int slot);

  const std::string path_;
  std::unique_ptr<WritableFile> file_;
  uint64_t ceiling_;
  int durable_slot_;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_CEILING_FILE_H_
