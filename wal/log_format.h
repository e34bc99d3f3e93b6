// The write-ahead log's on-disk format: segment file names, the segment header,
// fragment headers and the record prefix. wal/FORMAT.md is the specification
// (byte grammar and a worked example); this file and FORMAT.md must agree byte
// for byte, and the reader and writer use nothing but what is declared here.
//
// Pure functions and value types; thread-safe.
//
// Invariants of every segment the writer produces:
//   - bytes [0, kSegmentHeaderSize) hold the segment header; fragments start at
//     kSegmentHeaderSize and never cross a block boundary (blocks are aligned to
//     the start of the file);
//   - a block tail shorter than kMinFragmentSize is zero padding;
//   - every fragment has at least one payload byte, so an all-zero fragment
//     header can only mean "no more data in this segment".
#ifndef STRATA_WAL_LOG_FORMAT_H_
#define STRATA_WAL_LOG_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/cell_key.h"
#include "common/coding.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::wal {

// Bumped on any incompatible change; readers refuse other versions with NotSupported.
constexpr uint32_t kFormatVersion = 1;

// The block size the writer uses. Readers take the block size from each
// segment's header and accept any power of two in [kMinBlockSize, kMaxBlockSize].
constexpr uint32_t kBlockSize = 32 * 1024;
constexpr uint32_t kMinBlockSize = 256;
constexpr uint32_t kMaxBlockSize = 64 * 1024;  // fragment lengths are 16 bits

constexpr size_t kSegmentHeaderSize = 44;
constexpr size_t kFragmentHeaderSize = 11;
// A fragment carries at least one payload byte; a block tail shorter than this
// is padding.
constexpr size_t kMinFragmentSize = kFragmentHeaderSize + 1;
// fixed64 first_sequence + varint64 sequence_count.
constexpr size_t kMaxRecordPrefixSize = 8 + kMaxVarint64Length;

// "STRATAWL": the first eight bytes of every segment file.
inline constexpr char kSegmentMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'W', 'L'};

// Checksum seeds, so that no segment header checksum can pass as a fragment
// checksum or the other way round. DO NOT CHANGE: stored on disk.
constexpr uint64_t kSegmentHeaderSeed = 0x57414c4853545241ULL;  // "ARTSHLAW"
constexpr uint64_t kFragmentSeedBase = 0x57414c4653545241ULL;   // "ARTSFLAW"

// DO NOT CHANGE: stored on disk. Value 0 is never a fragment type: an all-zero
// fragment header marks the end of a segment's data.
enum class FragmentType : uint8_t {
  kFull = 1,    // a whole record
  kFirst = 2,   // the first piece of a record cut into several
  kMiddle = 3,  // neither the first nor the last piece
  kLast = 4,    // the last piece
};
constexpr uint8_t kMaxFragmentType = 4;
// The type byte holds the type in its low bits and this flag in its high bit.
// The writer sets it on the first fragment of a write group when everything
// before that group in the log had been made durable (fdatasync) before the
// group was written. A damaged spot followed by such a fragment was durable
// once, so it cannot be the lost tail of a crash (FORMAT.md "Recovery").
// DO NOT CHANGE: stored on disk.
constexpr uint8_t kDurableBeforeFlag = 0x80;
const char* FragmentTypeName(FragmentType type);
inline bool IsRecordStart(FragmentType t) {
  return t == FragmentType::kFull || t == FragmentType::kFirst;
}

// The fixed header at offset 0 of every segment file.
struct SegmentHeader {
  uint32_t format_version = kFormatVersion;
  uint32_t block_size = kBlockSize;
  uint64_t segment_number = 0;
  uint64_t segment_size = 0;  // bytes of the segment the writer fills, a multiple of block_size
  // The sequence number of the first record that starts in this segment, which
  // is also one past every sequence number used by records that started in
  // earlier segments (a record continued from the previous segment ends below
  // it). Lets the writer release segments without reading them.
  SequenceNumber first_sequence = 0;
};  // Intentionally copyable.

// Writes kSegmentHeaderSize bytes at dst.
void EncodeSegmentHeader(const SegmentHeader& header, char* dst);

// Decodes and checks the header at the front of `input`. Returns Corruption
// for a short, zero, checksum-failing or inconsistent header, NotSupported for
// another format version; callers add the file name. `*checksum_ok`
// (optional) tells whether the bytes passed their checksum: a header that
// does is well-formed data, so a problem with it cannot be a torn write.
Status DecodeSegmentHeader(const Slice& input, SegmentHeader* header, bool* checksum_ok = nullptr);

inline uint64_t FragmentSeed(uint64_t segment_number) { return kFragmentSeedBase ^ segment_number; }

// Fills in the fragment header at dst for the `length` payload bytes already
// at dst + kFragmentHeaderSize: length, type (with kDurableBeforeFlag when
// `durable_before`), segment and the checksum over all of them.
// REQUIRES: 1 <= length <= kMaxBlockSize - kFragmentHeaderSize.
void FinishFragment(char* dst, FragmentType type, bool durable_before, uint64_t segment_number,
                    size_t length);

// What lies at a fragment position.
enum class FragmentCheck {
  kValid,  // a fragment of this segment
  kZero,   // an all-zero header (or zero bytes up to the end of the file): no more data here
  kStale,  // a well-formed fragment of an older segment (left in a recycled file): no more data
  kBad,    // anything else: damaged or partly written
};
struct FragmentView {
  FragmentType type = FragmentType::kFull;
  bool durable_before = false;  // kDurableBeforeFlag was set
  Slice payload;
};  // Intentionally copyable.
// Classifies the bytes at p, where `available` bytes can be read (the file may
// end sooner than the block) and `block_left` bytes remain in the block.
// REQUIRES: block_left >= kMinFragmentSize. On kBad, *why says what is wrong.
FragmentCheck CheckFragment(const char* p, size_t available, size_t block_left,
                            uint64_t segment_number, FragmentView* fragment, std::string* why);

// The record prefix: fixed64 first_sequence, varint64 sequence_count. Writes
// it at dst (kMaxRecordPrefixSize bytes of room) and returns its length.
size_t EncodeRecordPrefix(char* dst, SequenceNumber first_sequence, uint64_t sequence_count);
// Consumes the prefix from the front of *body; false when it is malformed.
bool DecodeRecordPrefix(Slice* body, SequenceNumber* first_sequence, uint64_t* sequence_count);

// Segment files are "NNNNNNNNNN.log"; released segments kept for reuse are
// "NNNNNNNNNN.spare" and are never read as part of the log.
enum class LogFileKind { kSegment, kSpare };
std::string SegmentFileName(uint64_t number);
std::string SpareFileName(uint64_t number);
// Parses a file name of either kind; false for anything else.
bool ParseLogFileName(std::string_view name, uint64_t* number, LogFileKind* kind);

}  // namespace strata::wal

#endif  // STRATA_WAL_LOG_FORMAT_H_
