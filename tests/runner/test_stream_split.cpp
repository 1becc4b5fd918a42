// The stream tiles' automatic K split (src/cuda/moe/moe_launch.h): a host-side rule, tested here
// without a GPU. The H200: 132 SMs, 264 slots (two resident stream CTAs per SM).
#include <gtest/gtest.h>

#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {
namespace {

constexpr int64_t kSlots = 264;
constexpr int kSms = 132;
constexpr int kMaxSplit = 8;

int split(int64_t tiles, int64_t k_tiles) { return stream_auto_split(tiles, kSlots, kSms, k_tiles, kMaxSplit); }

TEST(StreamAutoSplit, FewTilesFillOneWave) {
  EXPECT_EQ(split(128, 112), 2);  // Mixtral gemm2 at T=1
  EXPECT_EQ(split(70, 112), 3);
  EXPECT_EQ(split(8, 112), 8);    // at most kMaxSplit
  EXPECT_EQ(split(8, 5), 5);      // at most one rank per k tile
}

TEST(StreamAutoSplit, AMostlyIdleLastWaveIsEvenedOut) {
  EXPECT_EQ(split(360, 23), 2);  // GPT-OSS gemm1 at T=1: 68% busy; 3 waves of half tiles, 91%
  EXPECT_EQ(split(300, 23), 3);  // 57%; split 2 76%, split 3 85%
}

TEST(StreamAutoSplit, BusyWavesStayUnsplit) {
  EXPECT_EQ(split(192, 16), 1);    // Qwen3 gemm1 at T=1: one wave, 73% busy
  EXPECT_EQ(split(180, 23), 1);    // GPT-OSS gemm2 at T=1: one wave, 68% busy
  EXPECT_EQ(split(896, 16), 1);    // DeepSeek-V3 gemm2 at T=1: 85%
  EXPECT_EQ(split(512, 56), 1);    // 97%
  EXPECT_EQ(split(10000, 16), 1);
}

TEST(StreamAutoSplit, DegenerateInputsGiveOne) {
  EXPECT_EQ(split(8, 1), 1);
  EXPECT_EQ(split(0, 112), 1);
  EXPECT_EQ(stream_auto_split(8, 0, kSms, 112, kMaxSplit), 1);
  EXPECT_EQ(stream_auto_split(8, kSlots, kSms, 112, 1), 1);
  EXPECT_EQ(split(360, 1), 1);  // one k tile: nothing to split
}

}  // namespace
}  // namespace moekit::cuda::moe
