// See wal/FORMAT.md for the format these functions encode.
#include "wal/log_format.h"

#include <cstdio>
#include <cstring>

#include "common/hash.h"

namespace strata::wal {

namespace {

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != 0) return false;
  }
  return true;
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

Status HeaderError(const std::string& why) {
  return Status::Corruption("bad segment header: " + why);
}

}  // namespace

const char* FragmentTypeName(FragmentType type) {
  switch (type) {
    case FragmentType::kFull:
      return "FULL";
    case FragmentType::kFirst:
      return "FIRST";
    case FragmentType::kMiddle:
      return "MIDDLE";
    case FragmentType::kLast:
      return "LAST";
  }
  return "UNKNOWN";
}

void EncodeSegmentHeader(const SegmentHeader& header, char* dst) {
  std::memcpy(dst, kSegmentMagic, sizeof(kSegmentMagic));
  EncodeFixed32(dst + 8, header.format_version);
  EncodeFixed32(dst + 12, header.block_size);
  EncodeFixed64(dst + 16, header.segment_number);
  EncodeFixed64(dst + 24, header.segment_size);
  EncodeFixed64(dst + 32, header.first_sequence);
  EncodeFixed32(dst + 40, Checksum32(dst, 40, kSegmentHeaderSeed));
}

Status DecodeSegmentHeader(const Slice& input, SegmentHeader* header, bool* checksum_ok) {
  if (checksum_ok != nullptr) *checksum_ok = false;
  const char* p = input.data();
  if (input.size() < kSegmentHeaderSize) {
    return HeaderError("the file holds only " + std::to_string(input.size()) + " of its " +
                       std::to_string(kSegmentHeaderSize) + " bytes");
  }
  if (AllZero(p, kSegmentHeaderSize)) return HeaderError("all zero (never written)");
  if (std::memcmp(p, kSegmentMagic, sizeof(kSegmentMagic)) != 0) {
    return HeaderError("bad magic " + HexBytes(Slice(p, 8)));
  }
  const uint32_t stored = DecodeFixed32(p + 40);
  const uint32_t actual = Checksum32(p, 40, kSegmentHeaderSeed);
  if (!ChecksumMatches(stored, actual)) {
    return HeaderError("checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                       std::to_string(actual) + ")");
  }
  if (checksum_ok != nullptr) *checksum_ok = true;
  SegmentHeader h;
  h.format_version = DecodeFixed32(p + 8);
  h.block_size = DecodeFixed32(p + 12);
  h.segment_number = DecodeFixed64(p + 16);
  h.segment_size = DecodeFixed64(p + 24);
  h.first_sequence = DecodeFixed64(p + 32);
  if (h.format_version != kFormatVersion) {
    return Status::NotSupported("log format version " + std::to_string(h.format_version) +
                                "; this build reads version " + std::to_string(kFormatVersion));
  }
  if (!IsPowerOfTwo(h.block_size) || h.block_size < kMinBlockSize || h.block_size > kMaxBlockSize) {
    return HeaderError("bad block size " + std::to_string(h.block_size));
  }
  if (h.segment_size < h.block_size || h.segment_size % h.block_size != 0) {
    return HeaderError("segment size " + std::to_string(h.segment_size) +
                       " is not a positive multiple of the block size " +
                       std::to_string(h.block_size));
  }
  *header = h;
  return Status::OK();
}

void FinishFragment(char* dst, FragmentType type, bool durable_before, uint64_t segment_number,
                    size_t length) {
  EncodeFixed16(dst + 4, static_cast<uint16_t>(length));
  dst[6] =
      static_cast<char>(static_cast<uint8_t>(type) | (durable_before ? kDurableBeforeFlag : 0));
  EncodeFixed32(dst + 7, static_cast<uint32_t>(segment_number));
  EncodeFixed32(
      dst, Checksum32(dst + 4, kFragmentHeaderSize - 4 + length, FragmentSeed(segment_number)));
}

FragmentCheck CheckFragment(const char* p, size_t available, size_t block_left,
                            uint64_t segment_number, FragmentView* fragment, std::string* why) {
  if (available < kFragmentHeaderSize) {
    if (AllZero(p, available)) return FragmentCheck::kZero;
    *why = "fragment header cut short by the end of the file";
    return FragmentCheck::kBad;
  }
  if (AllZero(p, kFragmentHeaderSize)) return FragmentCheck::kZero;
  const uint32_t stored = DecodeFixed32(p);
  const size_t length = DecodeFixed16(p + 4);
  const uint8_t type_byte = static_cast<uint8_t>(p[6]);
  const uint8_t type = type_byte & static_cast<uint8_t>(~kDurableBeforeFlag);
  const uint32_t segment_low = DecodeFixed32(p + 7);
  if (type == 0 || type > kMaxFragmentType) {
    *why = "bad fragment type byte " + std::to_string(type_byte);
    return FragmentCheck::kBad;
  }
  if (length == 0 || length > block_left - kFragmentHeaderSize) {
    *why = "bad fragment length " + std::to_string(length) + " (" +
           std::to_string(block_left - kFragmentHeaderSize) + " bytes left in the block)";
    return FragmentCheck::kBad;
  }
  if (kFragmentHeaderSize + length > available) {
    *why = "fragment of " + std::to_string(length) + " bytes cut short by the end of the file";
    return FragmentCheck::kBad;
  }
  const size_t covered = kFragmentHeaderSize - 4 + length;
  if (segment_low != static_cast<uint32_t>(segment_number)) {
    // Only the low 32 bits are stored; the writer's segments are numbered far
    // closer together than 2^32, so the high bits are this segment's.
    uint64_t other = (segment_number & ~uint64_t{0xffffffff}) | segment_low;
    if (other > segment_number && other >= (uint64_t{1} << 32)) other -= uint64_t{1} << 32;
    if (other < segment_number && Checksum32(p + 4, covered, FragmentSeed(other)) == stored) {
      return FragmentCheck::kStale;
    }
    *why = "fragment names segment " + std::to_string(segment_low) + " and fails its checksum";
    return FragmentCheck::kBad;
  }
  const uint32_t actual = Checksum32(p + 4, covered, FragmentSeed(segment_number));
  if (!ChecksumMatches(stored, actual)) {
    *why = "fragment checksum mismatch (stored " + std::to_string(stored) + ", computed " +
           std::to_string(actual) + ")";
    return FragmentCheck::kBad;
  }
  fragment->type = static_cast<FragmentType>(type);
  fragment->durable_before = (type_byte & kDurableBeforeFlag) != 0;
  fragment->payload = Slice(p + kFragmentHeaderSize, length);
  return FragmentCheck::kValid;
}

size_t EncodeRecordPrefix(char* dst, SequenceNumber first_sequence, uint64_t sequence_count) {
  EncodeFixed64(dst, first_sequence);
  char* end = EncodeVarint64(dst + 8, sequence_count);
  return static_cast<size_t>(end - dst);
}

bool DecodeRecordPrefix(Slice* body, SequenceNumber* first_sequence, uint64_t* sequence_count) {
  return GetFixed64(body, first_sequence) && GetVarint64(body, sequence_count);
}

std::string SegmentFileName(uint64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%010llu.log", static_cast<unsigned long long>(number));
  return buf;
}

std::string SpareFileName(uint64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%010llu.spare", static_cast<unsigned long long>(number));
  return buf;
}

bool ParseLogFileName(std::string_view name, uint64_t* number, LogFileKind* kind) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot < 10 || dot > 20) return false;
  uint64_t n = 0;
  for (size_t i = 0; i < dot; i++) {
    const char c = name[i];
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  std::string_view suffix = name.substr(dot + 1);
  if (suffix == "log") {
    *kind = LogFileKind::kSegment;
  } else if (suffix == "spare") {
    *kind = LogFileKind::kSpare;
  } else {
    return false;
  }
  *number = n;
  return true;
}

}  // namespace strata::wal
