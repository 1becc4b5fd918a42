// The CUDA maps (src/cuda/moe/build_maps.cu) alone against a host construction of the contract in
// moekit/stages.h: rows grouped by local expert, in (token, slot) order inside an expert; the dest
// CSR in (token, slot) order. Every path is taken (one warp, one CTA by counting, the chunks, one CTA
// by sorting, CUB's radix sort) at sizes on both sides of each path's limits, with an expert range,
// an expert map and no_combine. The outputs are poisoned first and compared exactly. Also the
// launchers' own refusals (maps scratch too small; rows the 16-byte row kernels cannot read), which
// return before anything reaches the device and so run without a GPU too.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/moe/moe_launch.h"
#include "gpu_test_util.h"

namespace moekit {
namespace {

using cuda::moe::MapsOut;
using cuda::moe::TopkMapsArgs;

struct MapsCase {
  std::string name;
  int64_t tokens;
  int top_k, experts;
  int local_begin = 0, local_experts = -1;  // -1: all experts local
  bool expert_map = false;                  // local ids through a permuting map (some experts remote)
  bool no_combine = false;
};

struct HostMaps {
  std::vector<int64_t> expert_offsets, row_source, dest_offsets, dest_rows;
  std::vector<float> row_weight;
  std::vector<int32_t> row_dest;
};

// The contract, built the obvious way: a stable sort of the local entries by expert.
HostMaps reference_maps(const MapsCase& c, int EL, const std::vector<int32_t>& ids, const std::vector<float>& w,
                        const std::vector<int32_t>& map) {
  const int64_t n = c.tokens * c.top_k;
  auto local = [&](int64_t f) {
    const int32_t g = ids[static_cast<size_t>(f)];
    if (g < 0 || g >= c.experts) return -1;
    if (c.expert_map) return map[static_cast<size_t>(g)];
    const int l = g - c.local_begin;
    return l >= 0 && l < EL ? l : -1;
  };
  std::vector<int64_t> order;
  for (int64_t f = 0; f < n; ++f)
    if (local(f) >= 0) order.push_back(f);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return local(x) < local(y); });
  HostMaps h;
  h.expert_offsets.assign(static_cast<size_t>(EL) + 1, 0);
  for (int64_t f : order) ++h.expert_offsets[static_cast<size_t>(local(f)) + 1];
  for (int e = 0; e < EL; ++e) h.expert_offsets[static_cast<size_t>(e) + 1] += h.expert_offsets[static_cast<size_t>(e)];
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0), row_of(static_cast<size_t>(n), -1);
  for (int64_t f = 0; f < n; ++f) prefix[static_cast<size_t>(f) + 1] = prefix[static_cast<size_t>(f)] + (local(f) >= 0);
  for (size_t r = 0; r < order.size(); ++r) {
    const int64_t f = order[r], t = f / c.top_k;
    row_of[static_cast<size_t>(f)] = static_cast<int64_t>(r);
    h.row_source.push_back(t);
    h.row_weight.push_back(w[static_cast<size_t>(f)]);
    h.row_dest.push_back(static_cast<int32_t>(c.no_combine ? f : t));
  }
  h.dest_rows.assign(order.size(), -1);
  for (int64_t f = 0; f < n; ++f)
    if (row_of[static_cast<size_t>(f)] >= 0) h.dest_rows[static_cast<size_t>(prefix[static_cast<size_t>(f)])] = row_of[static_cast<size_t>(f)];
  const int64_t out_rows = c.no_combine ? n : c.tokens;
  for (int64_t o = 0; o <= out_rows; ++o) h.dest_offsets.push_back(o == out_rows ? prefix[static_cast<size_t>(n)] : prefix[static_cast<size_t>(c.no_combine ? o : o * c.top_k)]);
  return h;
}

void run_case(const MapsCase& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  const int64_t n = c.tokens * c.top_k;
  const int EL = c.local_experts < 0 ? c.experts : c.local_experts;
  std::mt19937_64 rng(seed);
  // Ids over [-2, E + 2): out-of-range ids count as remote; the map sends a quarter of the experts
  // to other ranks. A few experts get most entries so that runs cross chunk boundaries.
  std::uniform_int_distribution<int> id(-2, c.experts + 1), hot(0, 3), pick(0, 2);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& x : ids) x = pick(rng) == 0 ? hot(rng) : id(rng);
  std::vector<float> w(static_cast<size_t>(n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f + static_cast<float>(i % 97) / 128.0f;
  std::vector<int32_t> map;
  if (c.expert_map) {
    std::vector<int32_t> perm(static_cast<size_t>(c.experts));
    for (int e = 0; e < c.experts; ++e) perm[static_cast<size_t>(e)] = e;
    std::shuffle(perm.begin(), perm.end(), rng);
    map.assign(static_cast<size_t>(c.experts), -1);
    for (int e = 0; e < c.experts; ++e)
      if (perm[static_cast<size_t>(e)] < EL) map[static_cast<size_t>(e)] = perm[static_cast<size_t>(e)];
  }
  const HostMaps want = reference_maps(c, EL, ids, w, map);
  const size_t total = want.row_source.size();
  const int64_t out_rows = c.no_combine ? n : c.tokens;

  DeviceBuffer<int32_t> d_ids(static_cast<size_t>(n)), d_map(map.size());
  DeviceBuffer<float> d_w(static_cast<size_t>(n)), row_weight(static_cast<size_t>(n));
  DeviceBuffer<int64_t> expert_offsets(static_cast<size_t>(EL) + 1), row_source(static_cast<size_t>(n)),
      dest_offsets(static_cast<size_t>(out_rows) + 1), dest_rows(static_cast<size_t>(n));
  DeviceBuffer<int32_t> row_dest(static_cast<size_t>(n));
  size_t scratch_bytes = 0;
  ASSERT_TRUE(cuda::moe::topk_maps_scratch_bytes(n, EL, &scratch_bytes).ok());
  DeviceBuffer<unsigned char> scratch(scratch_bytes);
  ASSERT_NE(scratch.p, nullptr);
  d_ids.upload(ids);
  d_w.upload(w);
  if (!map.empty()) d_map.upload(map);
  for (const auto* b : {&expert_offsets, &row_source, &dest_offsets, &dest_rows}) b->poison();
  row_weight.poison();
  row_dest.poison();

  TopkMapsArgs a;
  a.topk_ids = d_ids.p;
  a.topk_weights = d_w.p;
  a.tokens = c.tokens;
  a.top_k = c.top_k;
  a.num_experts = c.experts;
  a.local_begin = c.local_begin;
  a.local_experts = EL;
  a.expert_map = map.empty() ? nullptr : d_map.p;
  a.no_combine = c.no_combine;
  a.out = MapsOut{expert_offsets.p, row_source.p, row_weight.p, dest_offsets.p, dest_rows.p, row_dest.p};
  a.scratch = scratch.p;
  a.scratch_bytes = scratch_bytes;
  const Status s = cuda::moe::launch_topk_maps(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.to_string();
  MOEKIT_ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(expert_offsets.download(static_cast<size_t>(EL) + 1), want.expert_offsets);
  EXPECT_EQ(dest_offsets.download(static_cast<size_t>(out_rows) + 1), want.dest_offsets);
  EXPECT_EQ(row_source.download(total), want.row_source);
  EXPECT_EQ(row_dest.download(total), want.row_dest);
  EXPECT_EQ(dest_rows.download(total), want.dest_rows);
  const std::vector<float> got_w = row_weight.download(total);
  EXPECT_EQ(std::memcmp(got_w.data(), want.row_weight.data(), total * sizeof(float)), 0) << "row_weight differs";
}

TEST(MapsCuda, EveryPathMatchesTheContract) {
  MOEKIT_REQUIRE_GPU();
  std::vector<MapsCase> cases = {
      {"T0 K8 E128", 0, 8, 128},
      {"warp: T4 K8 E64", 4, 8, 64},
      {"counting: T63 K8 E128 (504 entries)", 63, 8, 128},
      {"chunked: T64 K8 E128 (512 entries, the first)", 64, 8, 128},
      {"chunked: T128 K8 E128 (one full chunk)", 128, 8, 128},
      {"chunked: T129 K8 E128 (1032 entries)", 129, 8, 128},
      {"chunked: T512 K8 E256", 512, 8, 256},
      {"chunked: T1025 K4 E128, last chunk of 4", 1025, 4, 128},
      {"chunked: T4096 K8 E128", 4096, 8, 128},
      {"chunked: T16384 K8 E256 (128 chunks)", 16384, 8, 256},
      {"chunked: T3001 K3 E7, few experts", 3001, 3, 7},
      {"chunked: T777 K6 E2047, the most experts", 777, 6, 2047},
      {"chunked: expert range 32..95 of 160, T2000 K8", 2000, 8, 160, 32, 64},
      {"chunked: expert map 96 of 128, T2500 K8", 2500, 8, 128, 0, 96, true},
      {"chunked: no_combine T1500 K2 E8", 1500, 2, 8, 0, -1, false, true},
      {"chunked: no_combine, expert range, T999 K5 E40", 999, 5, 40, 10, 20, false, true},
      {"one CTA, sorted: T300 K8 E3000", 300, 8, 3000},
      {"radix sort: T1200 K4 E3000", 1200, 4, 3000},
      {"radix sort: no_combine, expert map, T700 K8 E2500", 700, 8, 2500, 0, 2200, true, true},
  };
  uint64_t seed = 1;
  for (const MapsCase& c : cases) run_case(c, ++seed);
}

// The chunked maps pass their counts through the caller's scratch: one byte short is refused.
TEST(MapsCuda, TooSmallScratchIsRefusedBeforeAnyLaunch) {
  TopkMapsArgs a;
  a.tokens = 512;
  a.top_k = 8;
  a.num_experts = 128;
  a.local_experts = 128;
  size_t need = 0;
  ASSERT_TRUE(cuda::moe::topk_maps_scratch_bytes(a.tokens * a.top_k, a.local_experts, &need).ok());
  ASSERT_GT(need, 0u);
  unsigned char host_scratch[1];  // never touched: the launcher refuses first
  a.scratch = host_scratch;
  a.scratch_bytes = need - 1;
  const Status s = cuda::moe::launch_topk_maps(a, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("maps scratch: " + std::to_string(need) + " bytes needed"), std::string::npos) << s.message();
}

// The activation and finalize kernels read and write 8 columns a thread with 16-byte accesses.
TEST(RowKernelsCuda, RowsTheyCannotReadAreRefusedBeforeAnyLaunch) {
  alignas(16) static unsigned char host_rows[64];  // never touched: the launchers refuse first
  int64_t total_rows = 1;
  cuda::moe::ActivationArgs act;
  act.in = host_rows;
  act.out = host_rows;
  act.total_rows = &total_rows;
  act.max_rows = 1;
  act.inter = 12;  // not a multiple of 8
  Status s = cuda::moe::launch_activation(act, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("I=12"), std::string::npos) << s.message();
  act.inter = 16;
  act.in = host_rows + 4;  // misaligned
  s = cuda::moe::launch_activation(act, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();

  cuda::moe::FinalizeArgs fin;
  fin.rows = host_rows;
  fin.out = host_rows;
  fin.out_rows = 1;
  fin.hidden = 20;  // not a multiple of 8
  s = cuda::moe::launch_finalize(fin, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("H=20"), std::string::npos) << s.message();
  fin.hidden = 16;
  fin.out = host_rows + 8;  // misaligned
  s = cuda::moe::launch_finalize(fin, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.to_string();
}

}  // namespace
}  // namespace moekit
