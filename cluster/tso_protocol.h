// The timestamp service's wire protocol (cluster/README.md, "Timestamp
// service").
//
// Over one TCP connection a client sends requests and reads one reply to
// each, in order. All integers are little-endian.
//
//   request  := magic:u32 ("STS1" = 0x31535453) count:u32   (1..2^18)
//   reply    := code:u8 (first:u64 count:u32            code 0, OK
//                      | length:u16 message:u8[length])  code 1, not the leader
//                                                          code 2, cannot serve now
//                                                          code 3, bad request
//
// A reply with code 0 gives `count` timestamps: first, first + 1, ...,
// first + count - 1. Code 1 sends the client to etcd for the leader; code 2
// (the bound is being extended, the lease is being renewed) is worth a retry
// at the same server.
//
// Functions are thread-safe (they share no state).
#ifndef STRATA_CLUSTER_TSO_PROTOCOL_H_
#define STRATA_CLUSTER_TSO_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::cluster::tso {

// DO NOT CHANGE: the wire format.
constexpr uint32_t kMagic = 0x31535453;  // "STS1"
constexpr size_t kRequestSize = 8;
enum class ReplyCode : uint8_t { kOk = 0, kNotLeader = 1, kUnavailable = 2, kBadRequest = 3 };
constexpr size_t kOkReplySize = 1 + 8 + 4;
constexpr size_t kMaxMessage = 1024;

// The etcd keys of a cluster rooted at `root` (cluster/README.md).
inline std::string LeaderKey(const std::string& root) { return root + "/tso/leader"; }
inline std::string BoundKey(const std::string& root) { return root + "/tso/bound"; }

void EncodeFixed32(char* dst, uint32_t v);
void EncodeFixed64(char* dst, uint64_t v);
uint32_t DecodeFixed32(const char* p);
uint64_t DecodeFixed64(const char* p);

}  // namespace strata::cluster::tso

#endif  // STRATA_CLUSTER_TSO_PROTOCOL_H_
