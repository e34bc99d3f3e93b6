// Engine internals in isolation: the merge a compaction or a scan runs over
// its children (engine/merging_iterator.h), and a level's files read through
// one ConcatIterator (engine/concat_iterator.h).
//
//   build/bench/engine_bench --benchmark_filter=Merge
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "engine/concat_iterator.h"
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
  void SeekBefore(const Slice& target) override {
    pos_ = std::lower_bound(keys_->begin(), keys_->end(), target.ToString()) - keys_->begin();
    pos_ = pos_ == 0 ? keys_->size() : pos_ - 1;
  }
  void Next() override { pos_++; }
  Slice key() const override { return Slice((*keys_)[pos_]); }
  Slice value() const override { return Slice((*keys_)[pos_]); }
  Status status() const override { return Status::OK(); }

 private:
  const std::vector<std::string>* keys_;
  size_t pos_ = 0;
};

// Sorted runs as the children of a ConcatIterator.
class VectorChildren final : public ConcatChildren {
 public:
  explicit VectorChildren(const std::vector<std::vector<std::string>>* runs) : runs_(runs) {}
  size_t size() const override { return runs_->size(); }
  Slice last_key(size_t i) const override {
    return (*runs_)[i].empty() ? Slice() : Slice((*runs_)[i].back());
  }
  Result<Opened> Open(size_t i) override {
    Opened opened;
    opened.it = std::make_unique<VectorIterator>(&(*runs_)[i]);
    return opened;
  }

 private:
  const std::vector<std::vector<std::string>>* runs_;
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

// A level-0 compaction's shape: 4 overlapping level-0 files over N disjoint
// level-1 files holding as much again, the level-1 files each a child
// (state.range(1) == 0) or read through one ConcatIterator (1).
void BM_MergeLevel0IntoLevel1(benchmark::State& state) {
  const int level1_files = static_cast<int>(state.range(0));
  const bool concat = state.range(1) != 0;
  auto runs = Runs(5);
  std::vector<std::vector<std::string>> level1(level1_files);
  const std::vector<std::string>& below = runs[4];
  for (size_t i = 0; i < below.size(); i++) {
    level1[i * level1_files / below.size()].push_back(below[i]);
  }
  Walk(state, [&] {
    std::vector<std::unique_ptr<InternalIterator>> children;
    for (int i = 0; i < 4; i++) children.push_back(std::make_unique<VectorIterator>(&runs[i]));
    if (concat) {
      children.push_back(NewConcatIterator(std::make_unique<VectorChildren>(&level1)));
    } else {
      for (const auto& f : level1) children.push_back(std::make_unique<VectorIterator>(&f));
    }
    return NewMergingIterator(std::move(children));
  });
}
BENCHMARK(BM_MergeLevel0IntoLevel1)->ArgsProduct({{2, 8, 20}, {0, 1}});

}  // namespace
}  // namespace strata::engine

BENCHMARK_MAIN();
