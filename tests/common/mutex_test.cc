#include "common/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(SharedGateTest, ReadersShareAndWritersExclude) {
  SharedGate gate;
  int value = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; i++) {
        std::unique_lock<SharedGate> l(gate);
        value++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(value, 40000);
  std::shared_lock<SharedGate> a(gate);
  std::thread other([&] { std::shared_lock<SharedGate> b(gate); });  // readers share
  other.join();
}

// Readers that overlap one another without a gap would hold a reader-preferring
// lock forever; a waiting writer here gets in, and readers go on afterwards.
TEST(SharedGateTest, AWaitingWriterIsNotStarvedByReaders) {
  SharedGate gate;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; t++) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::shared_lock<SharedGate> l(gate);
        reads++;
        std::this_thread::yield();  // hold it a moment, so readers overlap
      }
    });
  }
  while (reads.load() < 1000) std::this_thread::yield();
  for (int i = 0; i < 10; i++) {
    std::unique_lock<SharedGate> l(gate);  // would hang if readers could starve it
  }
  const uint64_t before = reads.load();
  while (reads.load() < before + 1000) std::this_thread::yield();
  stop = true;
  for (auto& t : readers) t.join();
}

}  // namespace
}  // namespace strata
