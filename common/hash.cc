#include "common/hash.h"

#include <xxhash.h>
#ifdef STRATA_HAVE_XXH_X86_DISPATCH
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif

namespace strata {

namespace {

// XXH3 hashes inputs up to this length with scalar code; longer ones (whole
// blocks, log records) go to the vector code the dispatcher picked.
constexpr size_t kXxh3MidSizeMax = 240;

}  // namespace

uint64_t Hash64(const char* data, size_t n, uint64_t seed) {
#ifdef STRATA_HAVE_XXH_X86_DISPATCH
  if (n > kXxh3MidSizeMax) return XXH3_64bits_withSeed_dispatch(data, n, seed);
#endif
  return XXH3_64bits_withSeed(data, n, seed);
}

ChecksumBuilder::ChecksumBuilder(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}
ChecksumBuilder::~ChecksumBuilder() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void ChecksumBuilder::Update(const char* data, size_t n) {
#ifdef STRATA_HAVE_XXH_X86_DISPATCH
  XXH3_64bits_update_dispatch(static_cast<XXH3_state_t*>(state_), data, n);
#else
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
#endif
}
uint64_t ChecksumBuilder::Finish64() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}
uint32_t ChecksumBuilder::Finish32() const { return static_cast<uint32_t>(Finish64()); }

}  // namespace strata
