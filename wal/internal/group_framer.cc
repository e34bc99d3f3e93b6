// Framing of a write group; the format is wal/FORMAT.md.
#include "wal/internal/group_framer.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "strata/slice.h"
#include "wal/log_format.h"
#include "wal/log_writer.h"

namespace strata::wal {

namespace {

// Positions are byte offsets from the start of the current segment file; the
// k-th segment after it starts at k * segment_size. Blocks are aligned to the
// start of every segment because segment_size is a multiple of kBlockSize.
class Layout {
 public:
  explicit Layout(uint64_t segment_size) : segment_size_(segment_size) {}

  // The first position at or after `pos` where a fragment may start: past the
  // header of a segment and past a block tail too short for a fragment.
  uint64_t FragmentStart(uint64_t pos) const {
    for (;;) {
      const uint64_t in_segment = pos % segment_size_;
      if (in_segment < kSegmentHeaderSize) {
        pos += kSegmentHeaderSize - in_segment;
        continue;
      }
      const uint64_t left = kBlockSize - pos % kBlockSize;
      if (left < kMinFragmentSize) {
        pos += left;
        continue;
      }
      return pos;
    }
  }

  // Where a record body of `body` bytes framed from `pos` ends.
  uint64_t Advance(uint64_t pos, uint64_t body) const {
    while (body > 0) {
      pos = FragmentStart(pos);
      const uint64_t n = std::min<uint64_t>(body, Room(pos));
      pos += kFragmentHeaderSize + n;
      body -= n;
    }
    return pos;
  }

  // Payload bytes a fragment starting at `pos` can hold.
  static uint64_t Room(uint64_t pos) { return kBlockSize - pos % kBlockSize - kFragmentHeaderSize; }

  // The end of the zero bytes written after a group ending at `pos`, so that a
  // reader finds an all-zero fragment header where the next fragment would go
  // (a recycled segment holds stale bytes there otherwise).
  uint64_t MarkerEnd(uint64_t pos) const {
    if (pos % segment_size_ == 0) return pos;  // the segment is full
    const uint64_t left = kBlockSize - pos % kBlockSize;
    if (left >= kMinFragmentSize) return pos + kFragmentHeaderSize;
    pos += left;
    if (pos % segment_size_ == 0) return pos;
    return pos + kFragmentHeaderSize;
  }

  uint64_t segment_size() const { return segment_size_; }

 private:
  const uint64_t segment_size_;
};

}  // namespace

GroupFramer::GroupFramer(uint64_t segment_size) : segment_size_(segment_size) {}

uint64_t GroupFramer::RecordEnd(uint64_t pos, const WriteRequest& r) const {
  const Layout layout(segment_size_);
  char prefix[kMaxRecordPrefixSize];
  return layout.Advance(
      pos, EncodeRecordPrefix(prefix, r.first_sequence, r.sequence_count) + r.payload.size());
}

uint64_t GroupFramer::MarkerEnd(uint64_t end) const { return Layout(segment_size_).MarkerEnd(end); }

void GroupFramer::Begin(char* image, uint64_t start, bool durable_before, uint64_t segment_number) {
  image_ = image;
  start_ = start;
  pos_ = start;
  durable_before_ = durable_before;
  segment_number_ = segment_number;
  chunks_.clear();
  chunks_.push_back(GroupChunk{0, 0, start, false, 0});
}

void GroupFramer::Add(const WriteRequest& r) {
  const Layout layout(segment_size_);
  const uint64_t segment_size = segment_size_;
  const uint64_t start = start_;
  char* const image = image_;
  uint64_t pos = pos_;
  char prefix[kMaxRecordPrefixSize];
  const size_t prefix_len = EncodeRecordPrefix(prefix, r.first_sequence, r.sequence_count);
  const Slice pieces[2] = {Slice(prefix, prefix_len), r.payload};
  size_t piece = 0, piece_off = 0;
  uint64_t left = prefix_len + r.payload.size();
  bool first = true;
  while (left > 0) {
    const uint64_t frag = layout.FragmentStart(pos);
    std::memset(image + (pos - start), 0, frag - pos);  // padding (and header space)
    const size_t segment_index = frag / segment_size;
    if (segment_index != chunks_.size() - 1) {
      // The record goes on in a new segment; its header's first_sequence is
      // one past every record that started before it.
      chunks_.back().end = static_cast<size_t>(segment_index * segment_size - start);
      GroupChunk c;
      c.begin = static_cast<size_t>(segment_index * segment_size + kSegmentHeaderSize - start);
      c.offset = kSegmentHeaderSize;
      c.new_segment = true;
      c.first_sequence = first ? r.first_sequence : r.first_sequence + r.sequence_count;
      chunks_.push_back(c);
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, Layout::Room(frag)));
    char* dst = image + (frag - start);
    char* out = dst + kFragmentHeaderSize;
    size_t copied = 0;
    while (copied < n) {
      const Slice& p = pieces[piece];
      const size_t take = std::min(n - copied, p.size() - piece_off);
      std::memcpy(out + copied, p.data() + piece_off, take);
      copied += take;
      piece_off += take;
      if (piece_off == p.size()) {
        piece++;
        piece_off = 0;
      }
    }
    left -= n;
    const FragmentType type = first ? (left == 0 ? FragmentType::kFull : FragmentType::kFirst)
                                    : (left == 0 ? FragmentType::kLast : FragmentType::kMiddle);
    FinishFragment(dst, type, durable_before_, segment_number_ + segment_index, n);
    durable_before_ = false;
    pos = frag + kFragmentHeaderSize + n;
    first = false;
  }
  pos_ = pos;
}

const std::vector<GroupChunk>& GroupFramer::Finish(uint64_t end) {
  const uint64_t marker_end = MarkerEnd(end);
  assert(pos_ == end);
  std::memset(image_ + (end - start_), 0, marker_end - end);
  chunks_.back().end = static_cast<size_t>(marker_end - start_);
  return chunks_;
}

}  // namespace strata::wal
