//===- BufferPoolTest.cpp - reuse of large tensor buffers -----------------===//

#include "heterps/Runtime/BufferPool.h"

#include "gtest/gtest.h"

#include <thread>

using namespace heterps::runtime;

namespace {

constexpr size_t kLarge = 1 << 20;

TEST(BufferPool, ReusesAFreedBufferOfTheSameSize) {
  BufferPool pool;
  uint8_t *first;
  {
    std::shared_ptr<uint8_t> a = pool.allocate(kLarge);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_EQ(pool.stats().cachedBytes, kLarge);
  std::shared_ptr<uint8_t> b = pool.allocate(kLarge);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool.stats().hits, 1);
  EXPECT_EQ(pool.stats().misses, 1);
  EXPECT_EQ(pool.stats().cachedBytes, 0u);
  // Another size is a miss; a live buffer is never handed out twice.
  std::shared_ptr<uint8_t> c = pool.allocate(2 * kLarge);
  std::shared_ptr<uint8_t> d = pool.allocate(kLarge);
  EXPECT_NE(d.get(), b.get());
  EXPECT_EQ(pool.stats().misses, 3);
}

TEST(BufferPool, HandsOutTheMostRecentlyFreedBufferThatFits) {
  BufferPool pool;
  uint8_t *older, *newer, *tooLarge;
  {
    auto a = pool.allocate(kLarge), b = pool.allocate(2 * kLarge),
         c = pool.allocate(4 * kLarge);
    older = a.get();
    newer = b.get();
    tooLarge = c.get();
    a.reset();
    b.reset();
  } // freed in the order a, b, c
  // c is the most recent but more than kMaxSlack times the request.
  static_assert(BufferPool::kMaxSlack < 4);
  std::shared_ptr<uint8_t> d = pool.allocate(kLarge);
  EXPECT_EQ(d.get(), newer);
  std::shared_ptr<uint8_t> e = pool.allocate(kLarge);
  EXPECT_EQ(e.get(), older);
  EXPECT_EQ(pool.stats().cachedBytes, 4 * kLarge);
  // A buffer goes back with its own size, not the size asked for.
  d.reset();
  EXPECT_EQ(pool.stats().cachedBytes, 6 * kLarge);
  std::shared_ptr<uint8_t> f = pool.allocate(2 * kLarge);
  EXPECT_EQ(f.get(), newer);
  std::shared_ptr<uint8_t> g = pool.allocate(3 * kLarge);
  EXPECT_EQ(g.get(), tooLarge);
  EXPECT_EQ(pool.stats().cachedBytes, 0u);
}

TEST(BufferPool, SmallBuffersBypassThePool) {
  BufferPool pool;
  { auto a = pool.allocate(100); }
  EXPECT_EQ(pool.stats().cachedBytes, 0u);
  EXPECT_EQ(pool.stats().hits + pool.stats().misses, 0);
  EXPECT_NE(pool.allocate(0), nullptr); // never null, even when empty
}

TEST(BufferPool, KeepsNoMoreThanItsCapacity) {
  BufferPool pool(3 * kLarge);
  {
    auto a = pool.allocate(kLarge), b = pool.allocate(kLarge),
         c = pool.allocate(kLarge), d = pool.allocate(kLarge);
  }
  EXPECT_EQ(pool.stats().cachedBytes, 3 * kLarge);
  pool.setCapacity(kLarge);
  EXPECT_EQ(pool.stats().cachedBytes, kLarge);
  pool.trim();
  EXPECT_EQ(pool.stats().cachedBytes, 0u);
}

// What a training step frees, the next one allocates again: a pool that
// follows its peak keeps all of it, beyond its capacity.
TEST(BufferPool, KeepsWhatItHadInUseAtOnceWhenFollowingThePeak) {
  BufferPool pool(kLarge, /*followPeak=*/true);
  {
    auto a = pool.allocate(kLarge), b = pool.allocate(kLarge),
         c = pool.allocate(kLarge);
    EXPECT_EQ(pool.stats().inUseBytes, 3 * kLarge);
  }
  EXPECT_EQ(pool.stats().peakInUseBytes, 3 * kLarge);
  EXPECT_EQ(pool.stats().cachedBytes, 3 * kLarge);
  {
    auto a = pool.allocate(kLarge), b = pool.allocate(kLarge),
         c = pool.allocate(kLarge);
    EXPECT_EQ(pool.stats().hits, 3);
  }
  pool.setCapacity(kLarge);
  EXPECT_EQ(pool.stats().cachedBytes, kLarge);
  { auto a = pool.allocate(kLarge), b = pool.allocate(kLarge); }
  EXPECT_EQ(pool.stats().cachedBytes, kLarge);
}

TEST(BufferPool, ConcurrentAllocationsAreDistinct) {
  BufferPool pool;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&pool, w] {
      for (int i = 0; i < 200; ++i) {
        auto a = pool.allocate(kLarge), b = pool.allocate(kLarge);
        ASSERT_NE(a.get(), b.get());
        a.get()[0] = static_cast<uint8_t>(w);
        b.get()[0] = static_cast<uint8_t>(w + 1);
        ASSERT_EQ(a.get()[0], w); // nobody else wrote into it
      }
    });
  for (std::thread &t : threads)
    t.join();
  BufferPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.hits + stats.misses, 4 * 200 * 2);
  EXPECT_LE(stats.cachedBytes, 8 * kLarge);
}

} // namespace
