// Engine internals in isolation: the merge a compaction or a scan runs over
// its children (engine/merging_iterator.h).
//
//   build/bench/engine_bench --benchmark_filter=Merge
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "engine/merging_iterator.h"

namespace strata::engine {
namespace {

// Sorted keys in memory, read through the iterator interface as a table's
// would be (virtual calls, slices into the entries).
class VectorIterator final : public InternalIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>* keys) : keys_(keys) {}
  bool Valid() const override { return pos_ < keys_->size(); }
  void SeekToFirst() override { pos_ = 0; }
  void Seek(const Slice& target) override {
    pos_ = std::lower_bound(keys_->begin(), keys_->end(), target.ToString()) - keys_->begin();
  }
  void Next() override { pos_++; }
  Slice key() const override { return Slice((*keys_)[pos_]); }
  Slice value() const override { return Slice((*keys_)[pos_]); }
  Status status() const override { return Status::OK(); }

 private:
  const std::vector<std::string>* keys_;
  size_t pos_ = 0;
};

constexpr int kKeys = 1 << 18;

// kKeys keys of 38 bytes (a cell key's size in db_bench) with a common
// prefix, dealt at random to `parts` sorted runs.
std::vector<std::vector<std::string>> Runs(int parts) {
  Random rnd(301);
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; i++) keys.push_back("0000000" + rnd.RandomLetters(31));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<std::vector<std::string>> runs(parts);
  for (const std::string& k : keys) runs[rnd.Uniform(parts)].push_back(k);
  return runs;
}

void Walk(benchmark::State& state, const std::function<std::unique_ptr<InternalIterator>()>& make) {
  size_t n = 0;
  for (auto _ : state) {
    auto it = make();
    for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}

// A merge of N overlapping children (level-0 files, or a scan's files).
void BM_MergeOverlapping(benchmark::State& state) {
  const auto runs = Runs(static_cast<int>(state.range(0)));
  Walk(state, [&] {
    std::vector<std::unique_ptr<InternalIterator>> children;
    for (const auto& r : runs) children.push_back(std::make_unique<VectorIterator>(&r));
    return NewMergingIterator(std::move(children));
  });
}
BENCHMARK(BM_MergeOverlapping)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32);

}  // namespace
}  // namespace strata::engine

BENCHMARK_MAIN();
