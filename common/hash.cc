#include "common/hash.h"

#include <xxhash.h>

namespace strata {

uint64_t Hash64(const char* data, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}

ChecksumBuilder::ChecksumBuilder(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}
ChecksumBuilder::~ChecksumBuilder() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void ChecksumBuilder::Update(const char* data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
}
uint64_t ChecksumBuilder::Finish64() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}
uint32_t ChecksumBuilder::Finish32() const { return static_cast<uint32_t>(Finish64()); }

}  // namespace strata
