// Timestamp layout: how a transaction timestamp carries wall-clock time.
//
// A timestamp is a uint64_t:
//
//   bits 63..18  physical: milliseconds since the Unix epoch (46 bits, enough
//                until the year 4199)
//   bits 17..0   logical: a counter that orders timestamps taken within one
//                physical millisecond (262,144 of them)
//
// so `ts >> 18` is the millisecond the timestamp was handed out at (or, when
// the oracle ran ahead of the clock, a little later), and a TTL or a GC
// lifetime can be read off two timestamps by subtracting their physical parts.
// Because the logical part is the low bits of one integer, "the logical
// counter runs out within a millisecond, move to the next" is just the carry
// of an increment. See txn/FORMAT.md.
//
// Timestamp 0 and kMaxTimestamp are never handed out; the row store rejects
// them as bad input.
//
// Pure functions and constants; thread-safe.
#ifndef STRATA_TXN_TIMESTAMP_H_
#define STRATA_TXN_TIMESTAMP_H_

#include <cstdint>

namespace strata::txn {

// DO NOT CHANGE: timestamps are stored on disk in cells, locks and ceilings.
constexpr int kLogicalBits = 18;
constexpr uint64_t kLogicalMask = (uint64_t{1} << kLogicalBits) - 1;
// The largest physical part: 2^46 - 1 milliseconds.
constexpr uint64_t kMaxPhysicalMillis = ~uint64_t{0} >> kLogicalBits;
constexpr uint64_t kMaxTimestamp = ~uint64_t{0};

// REQUIRES: physical_millis <= kMaxPhysicalMillis, logical <= kLogicalMask.
constexpr uint64_t ComposeTimestamp(uint64_t physical_millis, uint64_t logical) {
  return (physical_millis << kLogicalBits) | logical;
}
constexpr uint64_t PhysicalMillis(uint64_t ts) { return ts >> kLogicalBits; }
constexpr uint64_t LogicalPart(uint64_t ts) { return ts & kLogicalMask; }

static_assert(ComposeTimestamp(1, 0) == 262144);
static_assert(PhysicalMillis(ComposeTimestamp(kMaxPhysicalMillis, kLogicalMask)) ==
              kMaxPhysicalMillis);

}  // namespace strata::txn

#endif  // STRATA_TXN_TIMESTAMP_H_
