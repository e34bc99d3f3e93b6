// Random: a small, fast, seedable pseudo-random generator (xoshiro256**) for
// tests, benchmarks and skiplist heights. Not for anything cryptographic.
//
// Thread-compatible. Intentionally copyable.
#ifndef STRATA_COMMON_RANDOM_H_
#define STRATA_COMMON_RANDOM_H_

#include <cstdint>
#include <string>

namespace strata {

class Random {
 public:
  explicit Random(uint64_t seed) { Seed(seed); }

  void Seed(uint64_t seed) {
    // splitmix64 expands the seed into the four state words.
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }

  uint64_t Next64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  uint32_t Next() { return static_cast<uint32_t>(Next64() >> 32); }

  // Uniform in [0, n). REQUIRES: n > 0
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next64()) * n) >> 64);
  }
  // True with probability 1/n. REQUIRES: n > 0
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }
  // Skewed towards small numbers: picks a bit count in [0, max_log] uniformly,
  // then a number of that many bits. REQUIRES: 0 <= max_log < 64
  uint64_t Skewed(int max_log) { return Uniform(uint64_t{1} << Uniform(max_log + 1)); }

  // `len` random bytes (any byte value).
  std::string RandomBytes(size_t len) {
    std::string r(len, '\0');
    for (auto& c : r) c = static_cast<char>(Next64() & 0xff);
    return r;
  }
  // `len` random lowercase letters.
  std::string RandomLetters(size_t len) {
    std::string r(len, '\0');
    for (auto& c : r) c = static_cast<char>('a' + Uniform(26));
    return r;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace strata

#endif  // STRATA_COMMON_RANDOM_H_
