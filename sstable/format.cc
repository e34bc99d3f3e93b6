// Block and footer encoding; see sstable/FORMAT.md for the byte grammar.
#include "sstable/format.h"

#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::sstable {

namespace {

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_DCtx* ThreadDCtx() {
  // One decompression context per thread: readers are shared across threads
  // and a context must not be used by two at once.
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  return dctx.get();
}

std::string Hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

const char* BlockKindName(BlockKind kind) {
  switch (kind) {
    case BlockKind::kData:
      return "data";
    case BlockKind::kIndex:
      return "index";
    case BlockKind::kFilter:
      return "filter";
    case BlockKind::kProperties:
      return "properties";
  }
  return "unknown";
}

const char* CompressionTypeName(CompressionType type) {
  switch (type) {
    case CompressionType::kNone:
      return "none";
    case CompressionType::kZstd:
      return "zstd";
  }
  return "unknown";
}

void BlockHandle::EncodeTo(std::string* dst) const {
  PutVarint64(dst, offset);
  PutVarint64(dst, size);
}

bool BlockHandle::DecodeFrom(Slice* input) {
  return GetVarint64(input, &offset) && GetVarint64(input, &size);
}

uint64_t BlockHandle::end() const { return offset + size + kBlockTrailerSize; }

Status BlockCorruption(const std::string& file_name, BlockKind kind, uint64_t offset,
                       const std::string& what) {
  return Status::Corruption("file " + file_name + ": " + BlockKindName(kind) +
                            " block at offset " + std::to_string(offset) + ": " + what);
}

void Footer::EncodeTo(std::string* dst) const {
  const size_t start = dst->size();
  for (const BlockHandle* h : {&filter, &index, &properties}) {
    PutFixed64(dst, h->offset);
    PutFixed64(dst, h->size);
  }
  PutFixed32(dst, format_version);
  PutFixed32(dst, Checksum32(dst->data() + start, 52, kFooterChecksumSeed));
  PutFixed64(dst, kTableMagic);
}

Result<Footer> Footer::Read(const RandomAccessFile& file, uint64_t file_size,
                            const std::string& file_name) {
  if (file_size < kEncodedLength) {
    return Status::Corruption("file " + file_name + ": too short to be an SSTable (" +
                              std::to_string(file_size) + " bytes; the footer alone is " +
                              std::to_string(kEncodedLength) + ")");
  }
  const uint64_t offset = file_size - kEncodedLength;
  char buf[kEncodedLength];
  Slice got;
  Status s = file.Read(offset, kEncodedLength, &got, buf);
  if (!s.ok()) return s.WithContext("file " + file_name + ": reading the footer");
  return Decode(got, file_name, offset);
}

Result<Footer> Footer::Decode(const Slice& input, const std::string& file_name, uint64_t offset) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption("file " + file_name + ": footer at offset " +
                              std::to_string(offset) + ": " + what);
  };
  if (input.size() != kEncodedLength) {
    return bad("short footer: " + std::to_string(input.size()) + " bytes");
  }
  const char* p = input.data();
  const uint64_t magic = DecodeFixed64(p + 56);
  if (magic != kTableMagic) {
    return bad("bad magic number " + Hex64(magic) + " (not an SSTable, or damaged)");
  }
  const uint32_t stored = DecodeFixed32(p + 52);
  const uint32_t actual = Checksum32(p, 52, kFooterChecksumSeed);
  if (!ChecksumMatches(stored, actual)) return bad("checksum mismatch");
  Footer f;
  BlockHandle* handles[] = {&f.filter, &f.index, &f.properties};
  for (int i = 0; i < 3; i++) {
    handles[i]->offset = DecodeFixed64(p + 16 * i);
    handles[i]->size = DecodeFixed64(p + 16 * i + 8);
  }
  f.format_version = DecodeFixed32(p + 48);
  if (!IsKnownFormatVersion(f.format_version)) {
    return Status::NotSupported("file " + file_name + ": SSTable format version " +
                                std::to_string(f.format_version) + " (this build reads " +
                                std::to_string(kFormatVersion1) + " to " +
                                std::to_string(kFormatVersion3) + ")");
  }
  return f;
}

CompressionType EncodeBlock(const Slice& raw, BlockKind kind, CompressionType compression,
                            int level, void* zstd_cctx, std::string* out) {
  const size_t start = out->size();
  CompressionType type = CompressionType::kNone;
  if (compression == CompressionType::kZstd && raw.size() >= 64) {
    const size_t bound = ZSTD_compressBound(raw.size());
    out->resize(start + kMaxVarint32Length + bound);
    char* p = EncodeVarint32(out->data() + start, static_cast<uint32_t>(raw.size()));
    const size_t header = p - (out->data() + start);
    size_t n;
    if (zstd_cctx != nullptr) {
      n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_cctx), p, bound, raw.data(), raw.size(),
                            level);
    } else {
      n = ZSTD_compress(p, bound, raw.data(), raw.size(), level);
    }
    // Keep the compressed form only if it saves at least 1/8 of the block.
    if (!ZSTD_isError(n) && header + n <= raw.size() - raw.size() / 8) {
      out->resize(start + header + n);
      type = CompressionType::kZstd;
    } else {
      out->resize(start);
    }
  }
  if (type == CompressionType::kNone) out->append(raw.data(), raw.size());
  out->push_back(static_cast<char>(type));
  const uint32_t crc =
      Checksum32(out->data() + start, out->size() - start, BlockChecksumSeed(kind));
  PutFixed32(out, crc);
  return type;
}

namespace {

constexpr size_t kMaxPooledBlock = 64 << 10;
constexpr int kPoolSlots = 4;

struct BlockMemoryPool {
  BlockMemory slots[kPoolSlots];
};

BlockMemoryPool& ThreadPool() {
  thread_local BlockMemoryPool pool;
  return pool;
}

}  // namespace

BlockMemory AllocateBlockMemory(size_t n) {
  if (n <= kMaxPooledBlock) {
    BlockMemoryPool& pool = ThreadPool();
    BlockMemory* best = nullptr;
    for (BlockMemory& m : pool.slots) {
      if (m.data != nullptr && m.capacity >= n && m.capacity <= n + n / 8 &&
          (best == nullptr || m.capacity < best->capacity)) {
        best = &m;
      }
    }
    if (best != nullptr) return std::exchange(*best, BlockMemory{});
  }
  return BlockMemory{std::make_unique_for_overwrite<char[]>(n), n};
}

void ReleaseBlockMemory(BlockMemory m) {
  if (m.data == nullptr || m.capacity > kMaxPooledBlock) return;
  // Keep the largest buffers: they fit the most requests.
  BlockMemory* smallest = nullptr;
  for (BlockMemory& slot : ThreadPool().slots) {
    if (slot.data == nullptr) {
      slot = std::move(m);
      return;
    }
    if (smallest == nullptr || slot.capacity < smallest->capacity) smallest = &slot;
  }
  if (smallest->capacity < m.capacity) std::swap(*smallest, m);
  // `m` (now the smallest) is freed here.
}

namespace {

// Verifies a stored block (contents + trailer) and uncompresses it: *raw is
// the contents inside `stored` (type none) or in *uncompressed (zstd).
Status VerifyAndUncompress(Slice stored, const std::string& file_name, BlockKind kind,
                           uint64_t offset, Slice* raw, BlockMemory* uncompressed,
                           CompressionType* type) {
  if (stored.size() < kBlockTrailerSize) {
    return BlockCorruption(file_name, kind, offset, "truncated block");
  }
  const size_t n = stored.size() - kBlockTrailerSize;
  const uint32_t expected = DecodeFixed32(stored.data() + n + 1);
  const uint32_t actual = Checksum32(stored.data(), n + 1, BlockChecksumSeed(kind));
  if (!ChecksumMatches(expected, actual)) {
    return BlockCorruption(file_name, kind, offset,
                           "checksum mismatch (stored " + std::to_string(expected) +
                               ", computed " + std::to_string(actual) + ")");
  }
  const uint8_t t = static_cast<uint8_t>(stored.data()[n]);
  switch (static_cast<CompressionType>(t)) {
    case CompressionType::kNone:
      *type = CompressionType::kNone;
      *raw = Slice(stored.data(), n);
      return Status::OK();
    case CompressionType::kZstd: {
      *type = CompressionType::kZstd;
      Slice in(stored.data(), n);
      uint32_t raw_size;
      if (!GetVarint32(&in, &raw_size) || raw_size > kMaxBlockSize) {
        return BlockCorruption(file_name, kind, offset, "bad uncompressed size");
      }
      BlockMemory out = AllocateBlockMemory(raw_size);
      const size_t got =
          ZSTD_decompressDCtx(ThreadDCtx(), out.data.get(), raw_size, in.data(), in.size());
      if (ZSTD_isError(got) || got != raw_size) {
        return BlockCorruption(file_name, kind, offset,
                               std::string("zstd decompression failed: ") +
                                   (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch"));
      }
      *uncompressed = std::move(out);
      *raw = Slice(uncompressed->data.get(), raw_size);
      return Status::OK();
    }
  }
  return BlockCorruption(file_name, kind, offset, "unknown compression type " + std::to_string(t));
}

// Reads the stored block at `handle` (contents and trailer) into a new
// buffer, unverified; *n is its length.
Status ReadStoredBlock(const RandomAccessFile& file, const std::string& file_name, BlockKind kind,
                       const BlockHandle& handle, BlockMemory* buf, size_t* n) {
  if (handle.size > kMaxBlockSize) {
    return BlockCorruption(file_name, kind, handle.offset,
                           "implausible block size " + std::to_string(handle.size));
  }
  *n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  *buf = AllocateBlockMemory(*n);
  Slice got;
  Status s = file.Read(handle.offset, *n, &got, buf->data.get());
  if (!s.ok()) {
    return s.WithContext("file " + file_name + ": reading " + BlockKindName(kind) +
                         " block at offset " + std::to_string(handle.offset));
  }
  if (got.size() != *n) {
    return BlockCorruption(file_name, kind, handle.offset,
                           "truncated block: read " + std::to_string(got.size()) + " of " +
                               std::to_string(*n) + " bytes");
  }
  if (got.data() != buf->data.get()) std::memcpy(buf->data.get(), got.data(), *n);
  return Status::OK();
}

}  // namespace

Status DecodeStoredBlock(Slice stored, const std::string& file_name, BlockKind kind,
                         uint64_t offset, BlockContents* result) {
  Slice raw;
  BlockMemory uncompressed;
  CompressionType type;
  STRATA_RETURN_IF_ERROR(
      VerifyAndUncompress(stored, file_name, kind, offset, &raw, &uncompressed, &type));
  result->data.assign(raw.data(), raw.size());
  ReleaseBlockMemory(std::move(uncompressed));
  result->stored_as = type;
  result->stored_size = stored.size() - kBlockTrailerSize;
  return Status::OK();
}

Status ReadBlock(const RandomAccessFile& file, const std::string& file_name, BlockKind kind,
                 const BlockHandle& handle, BlockContents* result) {
  BlockMemory buf;
  size_t n = 0;
  STRATA_RETURN_IF_ERROR(ReadStoredBlock(file, file_name, kind, handle, &buf, &n));
  Status s = DecodeStoredBlock(Slice(buf.data.get(), n), file_name, kind, handle.offset, result);
  ReleaseBlockMemory(std::move(buf));
  return s;
}

Status ReadBlock(const RandomAccessFile& file, const std::string& file_name, BlockKind kind,
                 const BlockHandle& handle, BlockMemory* memory, size_t* size) {
  BlockMemory buf;
  size_t n = 0;
  STRATA_RETURN_IF_ERROR(ReadStoredBlock(file, file_name, kind, handle, &buf, &n));
  Slice raw;
  BlockMemory uncompressed;
  CompressionType type;
  STRATA_RETURN_IF_ERROR(VerifyAndUncompress(Slice(buf.data.get(), n), file_name, kind,
                                             handle.offset, &raw, &uncompressed, &type));
  // Uncompressed contents stay in the read buffer; the trailer after them is
  // just not counted. A compressed block's read buffer goes back to the pool.
  if (uncompressed.data != nullptr) {
    ReleaseBlockMemory(std::move(buf));
    *memory = std::move(uncompressed);
  } else {
    *memory = std::move(buf);
  }
  *size = raw.size();
  return Status::OK();
}

}  // namespace strata::sstable
