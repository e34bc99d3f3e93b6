// Set-ups the engine tests share.
#ifndef STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
#define STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "engine/test_hooks.h"
#include "strata/engine.h"
#include "util/forwarding_fs.h"

namespace strata::test {

// Families a and c in the in-memory group "small", b in the group "big".
inline TableSchema TwoGroupSchema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "small", .in_memory = true});
  s.locality_groups.push_back({.name = "big"});
  s.families.push_back({.name = "a", .locality_group = "small"});
  s.families.push_back({.name = "b", .locality_group = "big"});
  s.families.push_back({.name = "c", .locality_group = "small"});
  return s;
}

// Creates tenant "t" holding table "tab" with the one family "f" and
// returns the table; on failure the test fails and the handle is empty.
inline Table CreateOneFamilyTable(Engine* engine) {
  TableSchema s;
  s.families = {{.name = "f"}};
  Status st = engine->CreateTenant("t");
  if (st.ok()) st = engine->OpenTenant("t")->CreateTable("tab", s);
  if (!st.ok()) {
    ADD_FAILURE() << st.ToString();
    return Table();
  }
  return *engine->OpenTenant("t")->OpenTable("tab");
}

// Counts reads of files opened for random access (SSTables): opens and
// block reads.
class CountingReadFileSystem : public ForwardingFileSystem {
 public:
  Status NewRandomAccessFile(const std::string& p,
                             std::unique_ptr<RandomAccessFile>* r) override {
    std::unique_ptr<RandomAccessFile> f;
    STRATA_RETURN_IF_ERROR(ForwardingFileSystem::NewRandomAccessFile(p, &f));
    opens_++;
    *r = std::make_unique<Counted>(std::move(f), &reads_);
    return Status::OK();
  }
  uint64_t reads() const { return reads_.load() + opens_.load(); }

 private:
  class Counted : public RandomAccessFile {
   public:
    Counted(std::unique_ptr<RandomAccessFile> base, std::atomic<uint64_t>* reads)
        : base_(std::move(base)), reads_(reads) {}
    Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
      reads_->fetch_add(1);
      return base_->Read(offset, n, result, scratch);
    }
    Result<uint64_t> Size() const override { return base_->Size(); }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    std::atomic<uint64_t>* reads_;
  };
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> opens_{0};
};

// Options under which only residency keeps an in-memory group off the disk:
// a block cache far smaller than the data, room for two open tables, small
// files and early compactions. Reads go through `fs`.
inline EngineOptions InMemoryTestOptions(FileSystem* fs) {
  EngineOptions o;
  o.file_system = fs;
  o.write_buffer_size = 32 << 10;
  o.block_cache_size = 64 << 10;
  o.max_open_tables = 2;
  o.target_file_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  return o;
}

// Parks the engine thread that reaches the test hook `*Hook`
// (engine/test_hooks.h) until Release(), once per Arm(): a test forces an
// interleaving that is otherwise too narrow to reach.
template <std::atomic<void (*)()>* Hook>
class ParkedHook {
 public:
  static void Arm() {
    reached_ = false;
    released_ = false;
    Hook->store(&Park);
  }
  // Whether a thread reached the hook within about ten seconds.
  static bool WaitReached() {
    for (int i = 0; i < 10000 && !reached_; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return reached_;
  }
  static void Release() { released_ = true; }

 private:
  static void Park() {
    Hook->store(nullptr);
    reached_ = true;
    while (!released_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  static inline std::atomic<bool> reached_{false};
  static inline std::atomic<bool> released_{false};
};

}  // namespace strata::test

#endif  // STRATA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
