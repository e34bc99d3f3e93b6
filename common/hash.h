// Checksums and hashes, all built on xxHash's XXH3.
//
// Checksum32 is what every on-disk block and log record stores; it is the low
// 32 bits of XXH3-64 with a seed, so a checksum of one kind of block never
// matches by accident when the same bytes are read as another kind.
//
// Pure functions; thread-safe.
#ifndef STRATA_COMMON_HASH_H_
#define STRATA_COMMON_HASH_H_

#include <cstddef>
#include <cstdint>

#include "strata/slice.h"

namespace strata {

uint64_t Hash64(const char* data, size_t n, uint64_t seed = 0);
inline uint64_t Hash64(const Slice& s, uint64_t seed = 0) { return Hash64(s.data(), s.size(), seed); }

// DO NOT CHANGE: checksums are stored on disk.
inline uint32_t Checksum32(const char* data, size_t n, uint64_t seed = 0) {
  return static_cast<uint32_t>(Hash64(data, n, seed));
}

// Whether a stored checksum is the one computed over the bytes. Every reader
// checks with this. A fuzzing build (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION,
// defined only by the clang build of tests/fuzz) takes every checksum as
// good, so that mutated inputs reach the decoders behind the checksums.
inline bool ChecksumMatches(uint32_t stored, uint32_t computed) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  (void)stored;
  (void)computed;
  return true;
#else
  return stored == computed;
#endif
}

// Incremental checksum over several pieces; equals Checksum32 of their concatenation.
class ChecksumBuilder {
 public:
  explicit ChecksumBuilder(uint64_t seed = 0);
  ~ChecksumBuilder();
  ChecksumBuilder(const ChecksumBuilder&) = delete;
  ChecksumBuilder& operator=(const ChecksumBuilder&) = delete;

  void Update(const char* data, size_t n);
  void Update(const Slice& s) { Update(s.data(), s.size()); }
  uint32_t Finish32() const;
  uint64_t Finish64() const;

 private:
  void* state_;  // XXH3_state_t*
};

}  // namespace strata

#endif  // STRATA_COMMON_HASH_H_
