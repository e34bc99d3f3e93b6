// The fixed pieces of the SSTable file format (sstable/FORMAT.md): block
// kinds, compression types, block handles, the block trailer and the footer,
// and the two routines every block goes through on its way to and from disk
// (WriteBlock / ReadBlock).
//
// Pure functions and value types; thread-safe. Every function that reads
// bytes from disk verifies them and reports damage as Status::Corruption
// naming the file, the block kind and the offset.
#ifndef STRATA_SSTABLE_FORMAT_H_
#define STRATA_SSTABLE_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

// The versions written into the footer and the properties block
// (FORMAT.md). Version 2 differs from 1 in the keys of data blocks (the
// cell-key tail) and in the filter block (blocked blooms); version 3 differs
// from 2 only in that a tail entry also shares the end of the previous
// entry's column. A reader refuses versions it does not know with
// NotSupported.
constexpr uint32_t kFormatVersion1 = 1;
constexpr uint32_t kFormatVersion2 = 2;
constexpr uint32_t kFormatVersion3 = 3;
// What the writer emits by default.
constexpr uint32_t kFormatVersion = kFormatVersion3;
inline bool IsKnownFormatVersion(uint32_t v) {
  return v >= kFormatVersion1 && v <= kFormatVersion3;
}

// "STRATSST" as little-endian bytes on disk.
constexpr uint64_t kTableMagic = 0x5453535441525453ull;  // DO NOT CHANGE: stored on disk

// DO NOT CHANGE: stored on disk (as the seed of each block's checksum).
enum class BlockKind : uint8_t {
  kData = 1,
  kIndex = 2,
  kFilter = 3,
  kProperties = 4,
};
// "data", "index", "filter", "properties".
const char* BlockKindName(BlockKind kind);

// DO NOT CHANGE: stored on disk (block trailer byte 0).
enum class CompressionType : uint8_t {
  kNone = 0,
  kZstd = 1,
};
const char* CompressionTypeName(CompressionType type);

// Seeds of Checksum32: one per block kind, so that a block read as the
// wrong kind fails its checksum, and one for the footer.
// DO NOT CHANGE: stored on disk.
constexpr uint64_t kChecksumSeedBase = 0x7374726174610000ull;  // "strata\0\0" read big-endian
inline uint64_t BlockChecksumSeed(BlockKind kind) {
  return kChecksumSeedBase | static_cast<uint8_t>(kind);
}
constexpr uint64_t kFooterChecksumSeed = kChecksumSeedBase | 0xff;

// Where a block lives: its offset in the file and the size of its stored
// contents (without the trailer). Intentionally copyable.
struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;

  // varint64 offset, varint64 size (the form used in index entries).
  void EncodeTo(std::string* dst) const;
  // Consumes a handle from the front of *input; false if malformed.
  bool DecodeFrom(Slice* input);
  // The end of the block including its trailer.
  uint64_t end() const;
  // True if the block and its trailer lie entirely below `limit` (no overflow).
  bool FitsBelow(uint64_t limit) const {
    return offset <= limit && size <= limit && end() <= limit;
  }
};
// The longest encoding of a BlockHandle.
constexpr size_t kMaxBlockHandleLength = 20;

// Every stored block is followed by: type:u8 checksum:fixed32.
constexpr size_t kBlockTrailerSize = 5;

// Readers take a block larger than this (as stored, or uncompressed) as
// damage; writers keep every block below it.
constexpr uint64_t kMaxBlockSize = uint64_t{1} << 31;

// The footer: three fixed-width handles, the version, a checksum over the
// preceding 52 bytes and the magic number; 64 bytes at the end of the file.
struct Footer {
  BlockHandle filter;  // size 0 and offset 0: the table has no filter
  BlockHandle index;
  BlockHandle properties;
  uint32_t format_version = kFormatVersion;

  static constexpr size_t kEncodedLength = 64;

  void EncodeTo(std::string* dst) const;
  // Decodes and verifies the 64 bytes of a footer read at `offset` of
  // `file_name`: magic number, checksum, version.
  static Result<Footer> Decode(const Slice& input, const std::string& file_name, uint64_t offset);
  // Reads and decodes the footer of `file`, `file_size` bytes long.
  static Result<Footer> Read(const RandomAccessFile& file, uint64_t file_size,
                             const std::string& file_name);
};

// A block's contents after reading: verified and uncompressed.
struct BlockContents {
  std::string data;
  CompressionType stored_as = CompressionType::kNone;
  uint64_t stored_size = 0;  // bytes on disk without the trailer
};

// Compresses `raw` (when `compression` is zstd and it saves at least 1/8),
// appends the stored block and its trailer to *out and returns the type it
// was stored as. `zstd_cctx` is a ZSTD_CCtx* reused across calls, or nullptr.
CompressionType EncodeBlock(const Slice& raw, BlockKind kind, CompressionType compression,
                            int level, void* zstd_cctx, std::string* out);

// Memory for one block's bytes, with the size it was allocated with.
struct BlockMemory {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;
};

// Block buffers come from a small pool per thread that evicted blocks give
// their buffers back to, so a reader missing the cache while the cache
// evicts at the same rate swaps buffers instead of freeing a cold one and
// allocating another. Buffers over 64 KiB are not pooled; a thread's pool
// holds at most four.
//
// A buffer of at least n bytes: a pooled one of at most n + n/8 bytes, or
// a new one of n.
BlockMemory AllocateBlockMemory(size_t n);
// Gives `m` to this thread's pool, or frees it (or a smaller pooled one).
void ReleaseBlockMemory(BlockMemory m);

// Reads the block at `handle` of kind `kind`, verifies its checksum and
// uncompresses it. Errors name `file_name`, the kind and the offset.
Status ReadBlock(const RandomAccessFile& file, const std::string& file_name, BlockKind kind,
                 const BlockHandle& handle, BlockContents* result);

// As ReadBlock, into a buffer from AllocateBlockMemory that is not
// zero-filled first (the path of data blocks on a cache miss): the
// uncompressed contents are the first *size bytes of *memory.
Status ReadBlock(const RandomAccessFile& file, const std::string& file_name, BlockKind kind,
                 const BlockHandle& handle, BlockMemory* memory, size_t* size);

// Verifies and uncompresses a stored block (`stored` = contents + trailer)
// already in memory.
Status DecodeStoredBlock(Slice stored, const std::string& file_name, BlockKind kind,
                         uint64_t offset, BlockContents* result);

// "file F: <kind> block at offset O: <what>" as a Corruption status.
Status BlockCorruption(const std::string& file_name, BlockKind kind, uint64_t offset,
                       const std::string& what);

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_FORMAT_H_
