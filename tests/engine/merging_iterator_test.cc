// MergingIterator and ConcatIterator against a std::map model: full walks
// and seeks over random children, children that run dry or start empty,
// children opened only when reached, and errors that stick.
#include "engine/merging_iterator.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "engine/concat_iterator.h"
#include "util/status_matchers.h"

namespace strata::engine {
namespace {

using Entries = std::map<std::string, std::string>;

// Iterates a map; fails with IOError on reaching `fail_at` (when set).
class VectorIterator final : public InternalIterator {
 public:
  explicit VectorIterator(Entries entries, std::string fail_at = "")
      : entries_(std::move(entries)), fail_at_(std::move(fail_at)), it_(entries_.end()) {}

  bool Valid() const override { return status_.ok() && it_ != entries_.end(); }
  void SeekToFirst() override { Settle(entries_.begin()); }
  void Seek(const Slice& target) override { Settle(entries_.lower_bound(target.ToString())); }
  void SeekBefore(const Slice& target) override {
    auto it = entries_.lower_bound(target.ToString());
    Settle(it == entries_.begin() ? entries_.end() : std::prev(it));
  }
  void Next() override { Settle(std::next(it_)); }
  Slice key() const override { return Slice(it_->first); }
  Slice value() const override { return Slice(it_->second); }
  Status status() const override { return status_; }

 private:
  void Settle(Entries::const_iterator it) {
    it_ = it;
    if (!fail_at_.empty() && it_ != entries_.end() && it_->first == fail_at_) {
      status_ = Status::IOError("injected at " + fail_at_);
    }
  }
  const Entries entries_;
  const std::string fail_at_;
  Entries::const_iterator it_;
  Status status_;
};

// Zero-padded, so keys sort as their numbers do (n < 10^8).
std::string Key(uint64_t n) {
  std::string digits = std::to_string(n);
  return "k" + std::string(8 - digits.size(), '0') + digits;
}

// Walks `it` from where it stands and checks it against `model` from `from`.
void ExpectSame(InternalIterator* it, const Entries& model, Entries::const_iterator from) {
  for (auto m = from; m != model.end(); ++m) {
    ASSERT_TRUE(it->Valid()) << m->first;
    ASSERT_EQ(it->key().ToString(), m->first);
    ASSERT_EQ(it->value().ToString(), m->second);
    it->Next();
  }
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
}

TEST(MergingIteratorTest, MatchesTheModelForAnyChildCount) {
  Random rnd(301);
  for (int children : {0, 1, 2, 3, 5, 8, 17, 40}) {
    Entries model;
    std::vector<Entries> parts(children);
    for (int i = 0; i < 3000 && children > 0; i++) {
      const std::string k = Key(rnd.Uniform(100000));
      if (model.count(k)) continue;  // keys are unique across children
      const std::string v = rnd.RandomLetters(1 + rnd.Uniform(8));
      model[k] = v;
      // Skewed, so some children are long and some empty.
      parts[rnd.Skewed(5) % children][k] = v;
    }
    std::vector<std::unique_ptr<InternalIterator>> its;
    for (auto& p : parts) its.push_back(std::make_unique<VectorIterator>(p));
    auto merged = NewMergingIterator(std::move(its));
    merged->SeekToFirst();
    ExpectSame(merged.get(), model, model.begin());
    for (int s = 0; s < 20; s++) {
      const std::string target = Key(rnd.Uniform(100001));
      merged->Seek(target);
      auto from = model.lower_bound(target);
      // A short walk from each seek, and one to the end.
      for (int n = 0; n < 10 && from != model.end(); n++, ++from) {
        ASSERT_TRUE(merged->Valid());
        ASSERT_EQ(merged->key().ToString(), from->first);
        merged->Next();
      }
      if (s == 19) ExpectSame(merged.get(), model, from);
    }
    // The last key below a target; then a seek walks on as before.
    for (int s = 0; s < 50; s++) {
      const std::string target = Key(rnd.Uniform(100001));
      merged->SeekBefore(target);
      auto below = model.lower_bound(target);
      if (below == model.begin()) {
        ASSERT_FALSE(merged->Valid()) << target;
      } else {
        --below;
        ASSERT_TRUE(merged->Valid()) << target;
        ASSERT_EQ(merged->key().ToString(), below->first);
        ASSERT_EQ(merged->value().ToString(), below->second);
      }
    }
    merged->Seek(Key(0));
    ExpectSame(merged.get(), model, model.begin());
  }
}

TEST(MergingIteratorTest, AtChildrenStartsAtTheSmallestPositionedChild) {
  Entries a{{"a1", "x"}, {"a5", "x"}}, b{{"a2", "y"}, {"a9", "y"}}, c{{"a3", "z"}};
  std::vector<std::unique_ptr<InternalIterator>> its;
  for (const Entries* e : {&a, &b, &c}) {
    its.push_back(std::make_unique<VectorIterator>(*e));
    its.back()->Seek("a2");
  }
  auto merged = NewMergingIteratorAtChildren(std::move(its));
  Entries model{{"a2", "y"}, {"a3", "z"}, {"a5", "x"}, {"a9", "y"}};
  ExpectSame(merged.get(), model, model.begin());
}

TEST(MergingIteratorTest, AChildsErrorSticks) {
  std::vector<std::unique_ptr<InternalIterator>> its;
  its.push_back(std::make_unique<VectorIterator>(Entries{{"a", ""}, {"c", ""}, {"e", ""}}));
  its.push_back(std::make_unique<VectorIterator>(Entries{{"b", ""}, {"d", ""}}, "d"));
  auto merged = NewMergingIterator(std::move(its));
  merged->SeekToFirst();
  std::string seen;
  for (; merged->Valid(); merged->Next()) seen += merged->key().ToString();
  // The second child fails as it moves past "b": the merge stops there.
  EXPECT_EQ(seen, "ab");
  EXPECT_TRUE(merged->status().IsIOError()) << merged->status().ToString();
  merged->SeekToFirst();
  EXPECT_FALSE(merged->Valid());
  EXPECT_TRUE(merged->status().IsIOError());
}

// Children made of maps; counts the opens; child `fail_open` cannot be
// opened (IOError).
class MapChildren final : public ConcatChildren {
 public:
  MapChildren(std::vector<Entries> parts, std::vector<std::string> fail_at, int* opens,
              size_t fail_open = SIZE_MAX)
      : parts_(std::move(parts)),
        fail_at_(std::move(fail_at)),
        opens_(opens),
        fail_open_(fail_open) {
    // An empty part's last key: its predecessor's (any key between works).
    std::string last;
    for (const Entries& p : parts_) {
      if (!p.empty()) last = p.rbegin()->first;
      last_keys_.push_back(last);
    }
  }
  size_t size() const override { return parts_.size(); }
  Slice last_key(size_t i) const override { return Slice(last_keys_[i]); }
  Result<Opened> Open(size_t i) override {
    (*opens_)++;
    if (i == fail_open_) return Status::IOError("cannot open child " + std::to_string(i));
    Opened opened;
    opened.it = std::make_unique<VectorIterator>(parts_[i], fail_at_[i]);
    return opened;
  }

 private:
  const std::vector<Entries> parts_;
  const std::vector<std::string> fail_at_;
  std::vector<std::string> last_keys_;
  int* const opens_;
  const size_t fail_open_;
};

TEST(ConcatIteratorTest, ReadsDisjointChildrenInTurnOpeningThemWhenReached) {
  Random rnd(302);
  Entries model;
  std::vector<Entries> parts;
  uint64_t next = 0;
  for (int child = 0; child < 12; child++) {
    Entries part;
    // Some children are empty.
    const int n = child % 4 == 2 ? 0 : static_cast<int>(1 + rnd.Uniform(50));
    for (int i = 0; i < n; i++) {
      next += 1 + rnd.Uniform(3);
      part[Key(next)] = std::to_string(child);
    }
    model.insert(part.begin(), part.end());
    parts.push_back(part);
  }
  const std::string last_of_child_5 = parts[5].rbegin()->first;
  int opens = 0;
  auto concat = NewConcatIterator(
      std::make_unique<MapChildren>(parts, std::vector<std::string>(parts.size()), &opens));
  EXPECT_EQ(opens, 0);
  // A seek opens the child that holds its target, not the ones before it.
  concat->Seek(last_of_child_5);
  ASSERT_TRUE(concat->Valid());
  EXPECT_EQ(concat->key().ToString(), last_of_child_5);
  EXPECT_EQ(opens, 1);
  concat->SeekToFirst();
  ExpectSame(concat.get(), model, model.begin());
  for (int s = 0; s < 50; s++) {
    const std::string target = Key(rnd.Uniform(next + 2));
    concat->Seek(target);
    ExpectSame(concat.get(), model, model.lower_bound(target));
  }
  // The last key below a target, across empty children too.
  for (uint64_t t = 0; t <= next + 1; t++) {
    const std::string target = Key(t);
    concat->SeekBefore(target);
    auto below = model.lower_bound(target);
    if (below == model.begin()) {
      ASSERT_FALSE(concat->Valid()) << target;
      ASSERT_OK(concat->status());
    } else {
      --below;
      ASSERT_TRUE(concat->Valid()) << target;
      ASSERT_EQ(concat->key().ToString(), below->first);
      ASSERT_EQ(concat->value().ToString(), below->second);
    }
  }
}

TEST(ConcatIteratorTest, AChildsErrorSticks) {
  int opens = 0;
  auto concat = NewConcatIterator(std::make_unique<MapChildren>(
      std::vector<Entries>{{{"a", ""}, {"b", ""}}, {{"c", ""}, {"d", ""}}, {{"e", ""}}},
      std::vector<std::string>{"", "d", ""}, &opens));
  std::string seen;
  for (concat->SeekToFirst(); concat->Valid(); concat->Next()) seen += concat->key().ToString();
  EXPECT_EQ(seen, "abc");
  EXPECT_TRUE(concat->status().IsIOError());
  // It sticks: a seek does nothing.
  concat->Seek("e");
  EXPECT_FALSE(concat->Valid());
  EXPECT_TRUE(concat->status().IsIOError());
}

TEST(ConcatIteratorTest, AChildThatCannotBeOpenedEndsTheWalkWithItsError) {
  int opens = 0;
  auto concat = NewConcatIterator(
      std::make_unique<MapChildren>(std::vector<Entries>{{{"a", ""}}, {{"b", ""}}, {{"c", ""}}},
                                    std::vector<std::string>(3), &opens, /*fail_open=*/1));
  concat->SeekToFirst();
  ASSERT_TRUE(concat->Valid());
  concat->Next();
  EXPECT_FALSE(concat->Valid());
  EXPECT_TRUE(concat->status().IsIOError()) << concat->status().ToString();
}

}  // namespace
}  // namespace strata::engine
