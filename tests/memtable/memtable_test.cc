#include "memtable/memtable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/mutex.h"
#include "common/random.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::memtable {
namespace {

using Model = std::map<std::string, std::string>;

// Bytes drawn mostly from a small alphabet of the values the key encoding
// escapes or that sit at the ends of the byte range, so that random keys share
// prefixes and exercise every escape case.
std::string InterestingBytes(Random* rnd, size_t len) {
  static constexpr char kAlphabet[] = {'\x00', '\x01', 'a', 'b', '\xfe', '\xff'};
  std::string s(len, '\0');
  for (char& c : s) {
    c = rnd->OneIn(8) ? static_cast<char>(rnd->Next()) : kAlphabet[rnd->Uniform(sizeof(kAlphabet))];
  }
  return s;
}

struct Cell {
  std::string row;
  uint16_t family = 0;
  std::string qualifier;
  uint64_t timestamp = 0;
  SequenceNumber seq = 0;
  CellType type = CellType::kPut;

  std::string Key() const {
    std::string k;
    AppendCellKey(&k, row, family, qualifier, timestamp, seq, type);
    return k;
  }
};

// Random cells of every type with distinct sequence numbers (so distinct
// keys). Earlier rows and columns come back often, so rows get many columns
// and columns many versions.
class CellGenerator {
 public:
  explicit CellGenerator(Random* rnd) : rnd_(rnd) {}

  Cell Next() {
    Cell c;
    c.type = static_cast<CellType>(1 + rnd_->Uniform(kMaxCellType));
    if (!columns_.empty() && rnd_->OneIn(3)) {
      const Cell& col = columns_[rnd_->Uniform(columns_.size())];
      c.row = col.row;
      c.family = col.family;
      c.qualifier = col.qualifier;
    } else {
      c.row = !rows_.empty() && rnd_->OneIn(2) ? rows_[rnd_->Uniform(rows_.size())] : RandomRow();
      c.family = RandomFamily();
      c.qualifier = RandomQualifier();
    }
    if (c.type == CellType::kDeleteRow) {
      c.family = kRowMarkerFamily;
      c.qualifier.clear();
    }
    c.timestamp = RandomTimestamp();
    c.seq = NextSequence();
    Remember(&rows_, c.row, 64);
    Remember(&columns_, c, 256);
    return c;
  }

  std::string RandomRow() { return InterestingBytes(rnd_, rnd_->Skewed(4)); }
  std::string RandomQualifier() { return InterestingBytes(rnd_, rnd_->Uniform(9)); }
  uint16_t RandomFamily() {
    static constexpr uint16_t kFamilies[] = {1, 2, 3, 0x100, 0xffff};
    if (rnd_->OneIn(10)) return static_cast<uint16_t>(rnd_->Next());
    return kFamilies[rnd_->Uniform(std::size(kFamilies))];
  }
  uint64_t RandomTimestamp() {
    static constexpr uint64_t kTimestamps[] = {
        0, 1, 2, 1000, uint64_t{1} << 32, ~uint64_t{0} - 1, ~uint64_t{0}};
    if (rnd_->OneIn(2)) return rnd_->Next64();
    return kTimestamps[rnd_->Uniform(std::size(kTimestamps))];
  }

 private:
  // Unique: most count up from 0, some count down from the maximum.
  SequenceNumber NextSequence() {
    if (rnd_->OneIn(10)) return kMaxSequenceNumber - high_++;
    SequenceNumber s = low_;
    low_ += 1 + rnd_->Uniform(3);
    return s;
  }
  template <typename T>
  void Remember(std::vector<T>* v, const T& x, size_t cap) {
    if (v->size() < cap) {
      v->push_back(x);
    } else {
      (*v)[rnd_->Uniform(cap)] = x;
    }
  }

  Random* const rnd_;
  SequenceNumber low_ = 0;
  SequenceNumber high_ = 0;
  std::vector<std::string> rows_;
  std::vector<Cell> columns_;
};

std::string RandomValue(Random* rnd) {
  // Now and then larger than a quarter arena block, which gets its own block.
  if (rnd->OneIn(200)) return rnd->RandomBytes(20000 + rnd->Uniform(1000));
  return rnd->RandomBytes(rnd->Skewed(8));
}

// Expects a < b in the order DESIGN.md asks for, judged on the parsed fields:
// row, family, qualifier ascending, timestamp and sequence descending.
void ExpectOrderedBefore(const Slice& a, const Slice& b) {
  ParsedCellKey pa, pb;
  ASSERT_TRUE(ParseCellKey(a, &pa)) << HexBytes(a);
  ASSERT_TRUE(ParseCellKey(b, &pb)) << HexBytes(b);
  auto rank = [](const ParsedCellKey& k) {
    return std::make_tuple(std::string_view(k.row), k.family, std::string_view(k.qualifier),
                           ~k.timestamp, ~k.sequence, -static_cast<int>(k.type));
  };
  ASSERT_TRUE(rank(pa) < rank(pb)) << CellKeyDebugString(a) << " before " << CellKeyDebugString(b);
}

// Iterates the whole memtable and compares it with the model.
void ExpectSameContents(const MemTable& mem, const Model& model) {
  ASSERT_EQ(model.size(), mem.num_entries());
  auto it = mem.NewIterator();
  it->SeekToFirst();
  const std::string* prev = nullptr;
  for (const auto& [key, value] : model) {
    ASSERT_TRUE(it->Valid()) << "missing " << CellKeyDebugString(key);
    ASSERT_EQ(key, it->key().ToString()) << CellKeyDebugString(it->key());
    ASSERT_EQ(value, it->value().ToString()) << CellKeyDebugString(key);
    if (prev != nullptr) {
      ASSERT_NO_FATAL_FAILURE(ExpectOrderedBefore(*prev, key));
    }
    prev = &key;
    it->Next();
  }
  ASSERT_FALSE(it->Valid());
  ASSERT_OK(it->status());
}

TEST(MemTableTest, Empty) {
  MemTable mem;
  EXPECT_EQ(0u, mem.num_entries());
  auto it = mem.NewIterator();
  EXPECT_FALSE(it->Valid());
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->Seek("");
  EXPECT_FALSE(it->Valid());
  it->Seek("\xff\xff");
  EXPECT_FALSE(it->Valid());
  EXPECT_OK(it->status());
}

// The example in memtable.h, byte for byte.
TEST(MemTableTest, EntryLayout) {
  MemTable mem;
  mem.Add(/*seq=*/7, CellType::kPut, "r1", /*family=*/1, "q", /*timestamp=*/5, "v1");
  EXPECT_EQ(1u, mem.num_entries());
  auto it = mem.NewIterator();
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  const std::string expected_key =
      "72310001"           // mc("r1")
      "0001"               // family 1
      "710001"             // mc("q")
      "fffffffffffffffa"   // ~timestamp
      "fffffffffffff8fe";  // ~(7 << 8 | kPut)
  EXPECT_EQ(expected_key, HexBytes(it->key()));
  EXPECT_EQ(25u, it->key().size());
  EXPECT_EQ("19", HexBytes(Slice(it->key().data() - 1, 1)));
  EXPECT_EQ("027631", HexBytes(Slice(it->key().data() + it->key().size(), 3)));
  EXPECT_EQ("v1", it->value().ToString());
  it->Next();
  EXPECT_FALSE(it->Valid());
}

TEST(MemTableTest, BothAddsAgreeAndLongValuesRoundTrip) {
  MemTable mem;
  std::string key;
  AppendCellKey(&key, "row", 2, "col", 10, 1, CellType::kPut);
  const std::string long_value(300, 'x');  // a two-byte length prefix
  mem.Add(key, long_value);
  mem.Add(/*seq=*/2, CellType::kPut, "row", /*family=*/2, "col", /*timestamp=*/10, "");

  auto it = mem.NewIterator();
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(2u, CellKeySequence(it->key()));  // higher sequence first
  EXPECT_EQ("", it->value().ToString());
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(key, it->key().ToString());
  EXPECT_EQ(long_value, it->value().ToString());
  it->Next();
  EXPECT_FALSE(it->Valid());
}

// A Seek target: an existing key, something next to one, a row or column
// prefix (of an existing or a random row), an absent cell key, or raw bytes.
std::string RandomSeekTarget(Random* rnd, CellGenerator* gen,
                             const std::vector<std::string>& keys) {
  const std::string* key = keys.empty() ? nullptr : &keys[rnd->Uniform(keys.size())];
  ParsedCellKey parsed;
  if (key != nullptr) {
    EXPECT_TRUE(ParseCellKey(*key, &parsed));
  }
  std::string t;
  switch (key == nullptr ? 8 + rnd->Uniform(2) : rnd->Uniform(10)) {
    case 0:
      return *key;
    case 1:
      return *key + '\0';  // just past it
    case 2:
      return key->substr(0, rnd->Uniform(key->size()));
    case 3:
      AppendRowPrefix(&t, parsed.row);
      return t;
    case 4:
      AppendColumnPrefix(&t, parsed.row, parsed.family, parsed.qualifier);
      return t;
    case 5:
      // Another column of an existing row.
      AppendColumnPrefix(&t, parsed.row, gen->RandomFamily(), gen->RandomQualifier());
      return t;
    case 6:
      // The same column at another timestamp.
      AppendCellKey(&t, parsed.row, parsed.family, parsed.qualifier, gen->RandomTimestamp(),
                    parsed.sequence, parsed.type);
      return t;
    case 7:
      return gen->Next().Key();
    case 8:
      AppendRowPrefix(&t, gen->RandomRow());
      return t;
    default:
      return rnd->RandomBytes(rnd->Uniform(8));
  }
}

// Seeks to random targets and steps forward a little, comparing with the model.
void CheckRandomSeeks(Random* rnd, CellGenerator* gen, const MemTable& mem, const Model& model,
                      const std::vector<std::string>& keys, int count) {
  auto it = mem.NewIterator();  // one iterator, reused across seeks
  for (int i = 0; i < count; i++) {
    const std::string target = RandomSeekTarget(rnd, gen, keys);
    SCOPED_TRACE("Seek(" + HexBytes(target) + ")");
    it->Seek(target);
    auto m = model.lower_bound(target);
    for (int step = static_cast<int>(rnd->Uniform(6)); step >= 0; step--) {
      if (m == model.end()) {
        ASSERT_FALSE(it->Valid());
        break;
      }
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(m->first, it->key().ToString())
          << CellKeyDebugString(it->key()) << " instead of " << CellKeyDebugString(m->first);
      ASSERT_EQ(m->second, it->value().ToString());
      it->Next();
      ++m;
    }
    // The last entry below the target.
    it->SeekBefore(target);
    m = model.lower_bound(target);
    if (m == model.begin()) {
      ASSERT_FALSE(it->Valid());
    } else {
      --m;
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(m->first, it->key().ToString());
      ASSERT_EQ(m->second, it->value().ToString());
    }
  }
}

// Random adds through both Add overloads, checked in growing batches: full
// iteration (order and values), seeks to random targets, counters, memory
// accounting, and that slices handed out earlier stay valid.
TEST(MemTableTest, RandomizedAgainstModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  CellGenerator gen(&rnd);
  const size_t total = test::LongTests() ? 200000 : 12000;
  const int rounds = test::LongTests() ? 10 : 3;

  for (int round = 0; round < rounds; round++) {
    MemTable mem;
    Model model;
    std::vector<std::string> keys;  // model's keys in insertion order
    size_t payload_bytes = 0;
    size_t last_usage = mem.ApproximateMemoryUsage();
    struct Handed {
      Slice key, value;
      std::string expected_key, expected_value;
    };
    std::vector<Handed> handed;

    while (model.size() < total) {
      const size_t batch = 1 + rnd.Uniform(std::max<size_t>(model.size() / 3, 10));
      for (size_t i = 0; i < batch; i++) {
        Cell c = gen.Next();
        std::string key = c.Key();
        std::string value = RandomValue(&rnd);
        ASSERT_TRUE(model.emplace(key, value).second);
        if (rnd.OneIn(2)) {
          mem.Add(key, value);
        } else {
          mem.Add(c.seq, c.type, c.row, c.family, c.qualifier, c.timestamp, value);
        }
        payload_bytes += key.size() + value.size();
        keys.push_back(std::move(key));
      }

      ASSERT_NO_FATAL_FAILURE(ExpectSameContents(mem, model));
      ASSERT_NO_FATAL_FAILURE(CheckRandomSeeks(&rnd, &gen, mem, model, keys, 200));

      const size_t usage = mem.ApproximateMemoryUsage();
      EXPECT_GE(usage, last_usage);
      EXPECT_GE(usage, payload_bytes);
      // Nodes, length prefixes and block tails cost something, but not this much.
      EXPECT_LE(usage, 2 * (payload_bytes + 128 * model.size()) + 2 * Arena::kBlockSize);
      last_usage = usage;
      // The data size counts what was allocated, not the block it came from.
      const size_t data = mem.ApproximateDataSize();
      EXPECT_GE(data, payload_bytes);
      EXPECT_LE(data, usage);
      EXPECT_GT(data + Arena::kBlockSize, usage);

      auto it = mem.NewIterator();
      it->Seek(keys[rnd.Uniform(keys.size())]);
      ASSERT_TRUE(it->Valid());
      handed.push_back({it->key(), it->value(), it->key().ToString(), it->value().ToString()});
    }
    // Slices point into the arena, so they outlive the iterators that gave them.
    for (const Handed& h : handed) {
      ASSERT_EQ(h.expected_key, h.key.ToString());
      ASSERT_EQ(h.expected_value, h.value.ToString());
    }
  }
}

// --- One writer, concurrent readers ---------------------------------------

// Shared, read-only description of what the writer inserts: entry i is
// keys[i] -> ValueFor(i), and entries are added in index order. Lets readers
// check that whatever they see is a real entry with the right value and that
// nothing published before they looked is missing.
class Workload {
 public:
  Workload(uint64_t seed, size_t n) {
    Random rnd(seed);
    CellGenerator gen(&rnd);
    std::vector<std::string> keys;
    keys.reserve(n);
    for (size_t i = 0; i < n; i++) keys.push_back(gen.Next().Key());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    sorted_ = keys;
    // Insertion order is a random permutation of the sorted keys.
    for (size_t i = keys.size(); i > 1; i--) std::swap(keys[i - 1], keys[rnd.Uniform(i)]);
    keys_ = std::move(keys);
    index_at_.resize(keys_.size());
    position_of_.resize(keys_.size());
    for (size_t i = 0; i < keys_.size(); i++) {
      size_t pos = LowerBound(keys_[i]);
      index_at_[pos] = i;
      position_of_[i] = pos;
    }
  }

  size_t size() const { return keys_.size(); }
  const std::string& key(size_t i) const { return keys_[i]; }

  // 4-byte index, then bytes derived from it; 4 to 60 bytes.
  static std::string ValueFor(size_t i) {
    std::string v;
    PutFixed32(&v, static_cast<uint32_t>(i));
    for (size_t j = 0; j < i % 57; j++) v.push_back(FillerByte(i, j));
    return v;
  }
  // Equal to ValueFor(i), without building it.
  static bool IsValueFor(size_t i, const Slice& v) {
    if (v.size() != 4 + i % 57 || DecodeFixed32(v.data()) != i) return false;
    for (size_t j = 0; j < i % 57; j++) {
      if (v[4 + j] != FillerByte(i, j)) return false;
    }
    return true;
  }

  // If (key, value) is some entry i with exactly its value, sets *index = i;
  // otherwise describes the problem in *error and returns false.
  bool Identify(const Slice& key, const Slice& value, size_t* index, std::string* error) const {
    if (value.size() < 4) {
      *error = "short value for " + CellKeyDebugString(key);
      return false;
    }
    size_t i = DecodeFixed32(value.data());
    if (i >= size() || key != Slice(keys_[i]) || !IsValueFor(i, value)) {
      *error = "unexpected entry " + CellKeyDebugString(key) + " -> " + HexBytes(value);
      return false;
    }
    *index = i;
    return true;
  }

  // Sorted position of the first key >= target.
  size_t LowerBound(const Slice& target) const {
    return std::lower_bound(sorted_.begin(), sorted_.end(), target.view(),
                            [](const std::string& a, std::string_view b) { return a < b; }) -
           sorted_.begin();
  }
  size_t position_of(size_t index) const { return position_of_[index]; }
  // True if no entry with sorted position in [begin, end) has index < published.
  bool NonePublishedIn(size_t begin, size_t end, size_t published, std::string* error) const {
    for (size_t pos = begin; pos < end; pos++) {
      if (index_at_[pos] < published) {
        *error = "missed entry " + std::to_string(index_at_[pos]) + " (" +
                 CellKeyDebugString(sorted_[pos]) + "), published before the read (" +
                 std::to_string(published) + " published)";
        return false;
      }
    }
    return true;
  }

 private:
  static char FillerByte(size_t i, size_t j) { return static_cast<char>(i * 31 + j); }

  std::vector<std::string> keys_;    // in insertion order
  std::vector<std::string> sorted_;  // in key order
  std::vector<size_t> index_at_;     // sorted position -> insertion index
  std::vector<size_t> position_of_;  // insertion index -> sorted position
};

// Walks from the iterator's position for up to `steps` entries (all if
// negative), checking each entry and that every published entry between
// sorted position `from` and the entry reached was seen.
bool CheckForward(const Workload& w, InternalIterator* it, size_t from, size_t published, int steps,
                  std::string* error) {
  for (; steps != 0; steps--) {
    if (!it->Valid()) return w.NonePublishedIn(from, w.size(), published, error);
    size_t index;
    if (!w.Identify(it->key(), it->value(), &index, error)) return false;
    const size_t pos = w.position_of(index);
    if (pos < from) {
      *error = "out of order: " + CellKeyDebugString(it->key());
      return false;
    }
    if (!w.NonePublishedIn(from, pos, published, error)) return false;
    from = pos + 1;
    it->Next();
  }
  return true;
}

// Seeks to the entry the writer added last or is adding now and steps past
// it, many times: the reads most likely to catch a node linked before its own
// pointers are set, or counted before it is linked. Stores in *chasing the
// entry count each seek started from, so the writer can time its next Add.
bool ChaseWriter(const Workload& w, const MemTable& mem, Random* rnd, std::atomic<size_t>* chasing,
                 std::string* error) {
  auto it = mem.NewIterator();
  for (int i = 0; i < 64; i++) {
    const size_t published = mem.num_entries();
    if (published >= w.size()) return true;
    chasing->store(published);
    const size_t index = published - (published > 0 ? rnd->Uniform(2) : 0);
    const std::string& target = w.key(index);
    it->Seek(target);
    if (index < published && (!it->Valid() || it->key() != Slice(target))) {
      *error = "Seek to the newest entry " + CellKeyDebugString(target) + " missed it";
      return false;
    }
    if (!CheckForward(w, it.get(), w.LowerBound(target), published, 3, error)) return false;
  }
  return true;
}

// One read and its checks, against a snapshot of num_entries() taken before it.
bool ReadOnce(const Workload& w, const MemTable& mem, Random* rnd, std::string* error) {
  const size_t published = mem.num_entries();
  auto it = mem.NewIterator();
  if (rnd->OneIn(4)) {
    it->SeekToFirst();
    if (!CheckForward(w, it.get(), 0, published, -1, error)) return false;
    return it->status().ok();
  }
  std::string target;
  const std::string& some_key = w.key(rnd->Uniform(w.size()));
  ParsedCellKey parsed;
  if (!ParseCellKey(some_key, &parsed)) {
    *error = "bad workload key";
    return false;
  }
  switch (rnd->Uniform(4)) {
    case 0:
      if (published == 0) return true;
      target = w.key(rnd->Uniform(published));
      it->Seek(target);
      if (!it->Valid() || it->key() != Slice(target)) {
        *error = "Seek to published key " + CellKeyDebugString(target) + " missed it";
        return false;
      }
      break;
    case 1:
      AppendRowPrefix(&target, parsed.row);
      it->Seek(target);
      break;
    case 2:
      AppendColumnPrefix(&target, parsed.row, parsed.family, parsed.qualifier);
      it->Seek(target);
      break;
    default:
      target = some_key;
      target.back() ^= 1;  // usually not in the workload
      it->Seek(target);
      break;
  }
  if (it->Valid() && it->key().compare(target) < 0) {
    *error = "Seek(" + HexBytes(target) + ") landed before the target";
    return false;
  }
  return CheckForward(w, it.get(), w.LowerBound(target), published, 16, error);
}

TEST(MemTableConcurrencyTest, ReadersSeeEveryPublishedEntryAndNothingTorn) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  // Reader 0 mostly chases the writer (ChaseWriter); the others scan and seek
  // all over the table (ReadOnce).
  constexpr int kReaders = 2;
  // The writer waits for every reader to finish one more read at each of
  // these checkpoints, so reads are spread over the whole fill.
  constexpr size_t kCheckpoints = 32;
  const Workload w(seed, test::LongTests() ? 500000 : 20000);
  MemTable mem;

  std::atomic<bool> done{false};
  std::atomic<bool> failed{false};
  std::atomic<size_t> chasing{0};
  std::atomic<uint64_t> reads[kReaders] = {};
  struct {
    Mutex mu;
    std::string message GUARDED_BY(mu);
  } first_error;

  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; r++) {
    readers.emplace_back([&, r] {
      Random rnd(seed + 1 + r);
      std::string error;
      while (!done.load() && !failed.load()) {
        bool ok = r == 0 && !rnd.OneIn(16) ? ChaseWriter(w, mem, &rnd, &chasing, &error)
                                           : ReadOnce(w, mem, &rnd, &error);
        if (!ok) {
          MutexLock l(&first_error.mu);
          if (!failed.exchange(true)) {
            first_error.message = "reader " + std::to_string(r) + ": " + error;
          }
          return;
        }
        reads[r].fetch_add(1);
      }
    });
  }

  for (size_t i = 0; i < w.size() && !failed.load(); i++) {
    // Give the chaser a moment to be seeking where entry i goes, so that the
    // Add races with its reads. A short spin, not a yield: the chaser may not
    // be running, and a yield on a busy machine costs a whole time slice.
    for (int spin = 0; spin < 300 && chasing.load() != i; spin++) {
    }
    mem.Add(w.key(i), Workload::ValueFor(i));
    if ((i + 1) % (w.size() / kCheckpoints + 1) == 0) {
      uint64_t seen[kReaders];
      for (int r = 0; r < kReaders; r++) seen[r] = reads[r].load();
      for (int r = 0; r < kReaders; r++) {
        while (reads[r].load() == seen[r] && !failed.load()) std::this_thread::yield();
      }
    }
  }
  done.store(true);
  for (auto& t : readers) t.join();
  {
    MutexLock l(&first_error.mu);
    ASSERT_FALSE(failed.load()) << first_error.message;
  }
  for (int r = 0; r < kReaders; r++) EXPECT_GE(reads[r].load(), kCheckpoints);

  // Everything, once the writer is done.
  ASSERT_EQ(w.size(), mem.num_entries());
  auto it = mem.NewIterator();
  it->SeekToFirst();
  std::string error;
  EXPECT_TRUE(CheckForward(w, it.get(), 0, w.size(), -1, &error)) << error;
}

// The row filter: every added row answers true, before and after the filter
// is made; most rows never added answer false once it is; a memtable made
// without one always answers true.
TEST(MemTableRowFilterTest, AddedRowsAlwaysMatchAbsentRowsMostlyDoNot) {
  auto prefix = [](const std::string& row) {
    std::string p;
    AppendRowPrefix(&p, row);
    return p;
  };
  const std::string value(100, 'v');
  MemTable mem(8 << 10);  // 64 Ki bits for about 1000 rows
  MemTable plain;
  std::vector<std::string> added;
  ASSERT_EQ(mem.RowFilterStart(), MemTable::kRowFilterMinStart);  // 8 KiB x 8 is below it
  for (int i = 0; mem.ApproximateDataSize() < mem.RowFilterStart() + (32 << 10); i++) {
    // Rows with 0x00 bytes (escaped in their prefix) and several cells each.
    const std::string row = "row" + std::string(1, '\0') + std::to_string(i);
    for (uint16_t family = 1; family <= 2; family++) {
      mem.Add(static_cast<SequenceNumber>(2 * i + family), CellType::kPut, row, family, "q", 5,
              value);
      plain.Add(static_cast<SequenceNumber>(2 * i + family), CellType::kPut, row, family, "q", 5,
                value);
    }
    added.push_back(row);
    if (mem.ApproximateDataSize() < mem.RowFilterStart()) {
      EXPECT_EQ(mem.row_filter_bytes(), 0u);
      EXPECT_TRUE(mem.MayContainRow(prefix("absent" + std::to_string(i))));
      // The row hashes kept for the filter count: 8 bytes a row.
      EXPECT_GE(mem.ApproximateMemoryUsage(), plain.ApproximateMemoryUsage() + 8 * added.size());
    }
    for (size_t j = added.size() > 8 ? added.size() - 8 : 0; j < added.size(); j++) {
      ASSERT_TRUE(mem.MayContainRow(prefix(added[j]))) << i << " " << j;
    }
  }
  EXPECT_EQ(mem.row_filter_bytes(), 8u << 10);
  EXPECT_EQ(plain.row_filter_bytes(), 0u);
  EXPECT_GE(mem.ApproximateMemoryUsage(), plain.ApproximateMemoryUsage() + (8 << 10));
  for (const std::string& row : added) EXPECT_TRUE(mem.MayContainRow(prefix(row))) << row;
  int false_positives = 0;
  constexpr int kProbes = 20000;
  for (int i = 0; i < kProbes; i++) {
    const std::string row = "other" + std::to_string(i);
    false_positives += mem.MayContainRow(prefix(row));
    EXPECT_TRUE(plain.MayContainRow(prefix(row)));
  }
  // About 0.4% at 64 bits per row; 2% leaves room for the blocks' spread.
  EXPECT_LT(false_positives, kProbes / 50) << false_positives;
}

// A reader that learned of an entry (through num_entries, as reads learn of
// them through the published sequence) always finds its row in the filter,
// while the writer goes on adding and makes the filter midway.
TEST(MemTableRowFilterTest, ConcurrentReadersFindEveryRowTheyLearnedOf) {
  const std::string value(64, 'v');
  const int rows = test::UnderSanitizer() ? 4000 : 20000;
  MemTable mem(16 << 10);  // made at 128 KiB of entries, midway
  ASSERT_EQ(mem.RowFilterStart(), size_t{128} << 10);
  std::vector<std::string> prefixes(rows);
  for (int i = 0; i < rows; i++) AppendRowPrefix(&prefixes[i], "r" + std::to_string(i));
  std::atomic<bool> failed{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&, r] {
      Random rnd(17 + r);
      uint64_t n;
      while ((n = mem.num_entries()) < static_cast<uint64_t>(rows) && !failed.load()) {
        if (n == 0) continue;
        // The newest entry it knows of, and a random older one.
        for (uint64_t i : {n - 1, rnd.Uniform(n)}) {
          if (!mem.MayContainRow(prefixes[i])) failed.store(true);
        }
      }
    });
  }
  for (int i = 0; i < rows; i++) {
    mem.Add(static_cast<SequenceNumber>(i + 1), CellType::kPut, "r" + std::to_string(i), 1, "q", 1,
            value);
  }
  for (auto& t : readers) t.join();
  EXPECT_FALSE(failed.load());
  EXPECT_GT(mem.row_filter_bytes(), 0u);
}

}  // namespace
}  // namespace strata::memtable
