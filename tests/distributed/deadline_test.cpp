// dist::deadline_after (src/distributed/deadline.h): now + timeout without int64
// overflow for a --ddp_timeout near the largest int64 number of seconds.
#include "distributed/deadline.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace loom::dist {
namespace {

using Clock = std::chrono::steady_clock;

TEST(DistDeadline, OrdinaryTimeoutIsNowPlusSeconds) {
  const Clock::time_point now = Clock::now();
  EXPECT_EQ(deadline_after(now, std::chrono::seconds(1800)), now + std::chrono::seconds(1800));
  EXPECT_EQ(deadline_after(now, std::chrono::seconds(0)), now);
}

TEST(DistDeadline, HugeTimeoutSaturatesInsteadOfWrappingIntoThePast) {
  const Clock::time_point now = Clock::now();
  // 1e10 s is ~1e19 ns: past int64 (9.2e18), the sum would wrap negative.
  for (int64_t s : {int64_t{10'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    const Clock::time_point d = deadline_after(now, std::chrono::seconds(s));
    EXPECT_EQ(d, Clock::time_point::max()) << s;
    EXPECT_GT(d, now) << s;
  }
  // The largest --ddp_timeout validate() accepts (1e9 s) is still exact.
  EXPECT_EQ(deadline_after(now, std::chrono::seconds(1'000'000'000)),
            now + std::chrono::seconds(1'000'000'000));
}

}  // namespace
}  // namespace loom::dist
