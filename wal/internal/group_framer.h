// GroupFramer: lays the records of one write group out as the log bytes they
// become (wal/FORMAT.md, "Segments and blocks" and "Records"), in one image
// that the log writer's group leader then writes, one chunk per segment the
// group touches. Each record body (its prefix, then the payload) is cut into
// fragments that never cross a block boundary; block tails too short for a
// fragment are zero padding; a group that runs past the end of a segment goes
// on after the next segment's header; and zero bytes after the group leave an
// all-zero fragment header where the next fragment would go.
//
// Positions are byte offsets from the start of the segment the group starts
// in; the k-th segment after it starts at k * segment_size.
//
// Thread-compatible: the log writer's group leader frames one group at a time
// (leadership is handed over under the writer's mutex, which orders one
// leader's use before the next one's).
//
// Invariants: an image framed from `start` to the `end` that RecordEnd
// predicted holds exactly the log bytes [start, MarkerEnd(end)); only the
// group's first fragment may carry durable_before; a chunk after the first
// starts right after its segment's header, which Finish leaves to the caller
// (the bytes there in the image are zeros).
#ifndef STRATA_WAL_INTERNAL_GROUP_FRAMER_H_
#define STRATA_WAL_INTERNAL_GROUP_FRAMER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cell_key.h"

namespace strata::wal {

struct WriteRequest;

// The part of a group's image that goes to one segment.
struct GroupChunk {
  size_t begin = 0;  // image range to write
  size_t end = 0;
  uint64_t offset = 0;                // file offset of image[begin]
  bool new_segment = false;           // the group starts this segment
  SequenceNumber first_sequence = 0;  // its header's first_sequence
};                                    // Intentionally copyable.

class GroupFramer {
 public:
  // REQUIRES: segment_size is a positive multiple of kBlockSize.
  explicit GroupFramer(uint64_t segment_size);
  GroupFramer(const GroupFramer&) = delete;
  GroupFramer& operator=(const GroupFramer&) = delete;

  // Where the record of `r`, framed from position `pos`, ends.
  uint64_t RecordEnd(uint64_t pos, const WriteRequest& r) const;
  // The end of the zero bytes written after a group ending at `end`, so that a
  // reader finds an all-zero fragment header where the next fragment would go
  // (a recycled segment holds stale bytes there otherwise).
  uint64_t MarkerEnd(uint64_t end) const;

  // Starts framing a group at position `start` of segment `segment_number`.
  // `durable_before` goes on the group's first fragment: whether all the log
  // before it is durable.
  // REQUIRES: `image` holds MarkerEnd(end) - start bytes, `end` being where
  // the records about to be added end.
  void Begin(char* image, uint64_t start, bool durable_before, uint64_t segment_number);
  // Frames the record of `r` after the ones added since Begin.
  void Add(const WriteRequest& r);
  // Writes the zero bytes after the group and returns the image's chunks, in
  // log order; valid until the next Begin.
  // REQUIRES: `end` is where the records added since Begin end.
  const std::vector<GroupChunk>& Finish(uint64_t end);

 private:
  const uint64_t segment_size_;
  // The group being framed (Begin to Finish).
  char* image_ = nullptr;
  uint64_t start_ = 0;
  uint64_t pos_ = 0;  // where the records added so far end
  bool durable_before_ = false;
  uint64_t segment_number_ = 0;
  std::vector<GroupChunk> chunks_;
};

}  // namespace strata::wal

#endif  // STRATA_WAL_INTERNAL_GROUP_FRAMER_H_
