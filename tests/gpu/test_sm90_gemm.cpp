// The sm_90a grouped GEMM (src/cuda/moe/sm90_grouped_gemm.h) against a float64 host GEMM: random
// 16-bit A and B, random per-expert row counts with empty experts, N and K multiples of 8 but not of
// the tile, D poisoned with NaN before each run (the rows past the routed count must keep the poison
// bit for bit), and a CUDA-graph capture replayed after the expert offsets change on the device.
// Runs only on compute capability 9.x; skips elsewhere.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/device_runtime.h"
#include "cpu/activation.h"
#include "cuda/moe/sm90_grouped_gemm.h"
#include "gpu_test_util.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

using cuda::moe::Elem;
using cuda::moe::Sm90GemmArgs;

#define MOEKIT_REQUIRE_SM90()                                                                       \
  do {                                                                                              \
    MOEKIT_REQUIRE_GPU();                                                                           \
    int moekit_major_ = 0;                                                                          \
    MOEKIT_ASSERT_CUDA(cudaDeviceGetAttribute(&moekit_major_, cudaDevAttrComputeCapabilityMajor, 0)); \
    if (moekit_major_ != 9) GTEST_SKIP() << "the sm_90a kernel needs compute capability 9.x, not " << moekit_major_; \
  } while (0)

// 16-bit code -> double, by table.
struct Decoder {
  std::vector<double> table;
  explicit Decoder(Elem t) : table(65536) {
    for (uint32_t c = 0; c < 65536; ++c)
      table[c] = t == Elem::kBF16 ? decode_bf16(static_cast<uint16_t>(c)) : decode_f16(static_cast<uint16_t>(c));
  }
  double operator()(uint16_t c) const { return table[c]; }
};

std::vector<uint16_t> random_codes(size_t n, Elem t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = t == Elem::kBF16 ? encode_bf16(u(rng)) : encode_f16(u(rng));
  return v;
}

// Expert offsets for `rows` rows over `experts` experts; every third expert (and, with more than one
// expert, expert 0) gets no rows.
std::vector<int64_t> random_offsets(int experts, int64_t rows, std::mt19937_64& rng) {
  std::vector<int> allowed;
  for (int e = 0; e < experts; ++e)
    if (experts == 1 || (e != 0 && e % 3 != 2)) allowed.push_back(e);
  std::vector<int64_t> counts(experts, 0);
  std::uniform_int_distribution<size_t> pick(0, allowed.size() - 1);
  for (int64_t r = 0; r < rows; ++r) ++counts[allowed[pick(rng)]];
  std::vector<int64_t> off(experts + 1, 0);
  for (int e = 0; e < experts; ++e) off[e + 1] = off[e] + counts[e];
  return off;
}

// D_ref[r, :] = A[r, :] . B[e]^T in float64 for the routed rows.
std::vector<double> reference(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                              const std::vector<int64_t>& off, int64_t n, int64_t k, const Decoder& dec) {
  const int experts = static_cast<int>(off.size()) - 1;
  const int64_t rows = off[experts];
  std::vector<double> d(static_cast<size_t>(rows * n), 0.0);
  std::vector<int> row_expert(static_cast<size_t>(rows));
  for (int e = 0; e < experts; ++e)
    for (int64_t r = off[e]; r < off[e + 1]; ++r) row_expert[r] = e;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> ar(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) ar[i] = dec(a[r * k + i]);
    const uint16_t* be = b.data() + static_cast<int64_t>(row_expert[r]) * n * k;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      const uint16_t* bj = be + j * k;
      for (int64_t i = 0; i < k; ++i) s += ar[i] * dec(bj[i]);
      d[r * n + j] = s;
    }
  }
  return d;
}

// Errors of rows [0, rows) of `cols` columns against the float64 reference, in one pass: the
// non-finite count, the relative L2 error of the whole block and that of the worst row. A row computed
// wrongly (a warpgroup that computed nothing, say) shows in the worst row even where the whole block's
// error would hide it.
struct RowErrors {
  int64_t nonfinite = 0;
  double whole = 0;
  double worst_row = 0;
};

template <class Got>
RowErrors row_errors(const Got& got, const std::vector<double>& ref, int64_t rows, int64_t cols) {
  RowErrors e;
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double row_num = 0, row_den = 0;
    for (int64_t j = r * cols; j < (r + 1) * cols; ++j) {
      const double v = static_cast<double>(got(j));
      if (!std::isfinite(v)) ++e.nonfinite;
      row_num += (v - ref[j]) * (v - ref[j]);
      row_den += ref[j] * ref[j];
    }
    e.worst_row = std::max(e.worst_row, std::sqrt(row_num / std::max(row_den, 1e-300)));
    num += row_num;
    den += row_den;
  }
  e.whole = std::sqrt(num / std::max(den, 1e-300));
  return e;
}

// Relative L2 error of the routed rows; counts rows past the routed count that lost the poison.
void check_output(const std::vector<float>& got, const std::vector<double>& ref, int64_t routed, int64_t max_rows,
                  int64_t n, const std::string& what) {
  const RowErrors e = row_errors([&](int64_t i) { return got[i]; }, ref, routed, n);
  EXPECT_EQ(e.nonfinite, 0) << what;
  if (routed > 0) {
    EXPECT_LT(e.whole, 1e-5) << what << ": relative L2 error " << e.whole;
    EXPECT_LT(e.worst_row, 1e-4) << what << ": the worst row's relative L2 error " << e.worst_row;
  }
  int64_t touched = 0;
  for (int64_t i = routed * n; i < max_rows * n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    if (bits != 0x7FC00000u) ++touched;
  }
  EXPECT_EQ(touched, 0) << what << ": elements past the routed rows were written";
}

int sm_count() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  return sms;
}

// A quiet NaN code of the 16-bit type t, the 16-bit outputs' poison.
uint16_t nan16(Elem t) { return t == Elem::kBF16 ? 0x7FC0 : 0x7E00; }

// How many of got[begin ..] lost the poison (elements past the routed rows that were written).
int64_t poison_lost(const std::vector<uint16_t>& got, int64_t begin, uint16_t poison) {
  return std::count_if(got.begin() + begin, got.end(), [&](uint16_t v) { return v != poison; });
}

// A host-to-device copy that has landed when it returns: the library's memcpy_sync. A plain
// cudaMemcpy from pageable memory may return before its DMA ends (the CUDA runtime's "API
// synchronization behavior"), and the cases run on non-blocking streams, which do not wait for the
// legacy stream the copy runs on: a kernel could read the buffer's old bytes. The likely cause of the
// one failure of call 5 of docs/device-logs/2026-11-28-rules/ (Bf16LargeShapes, E=1 R=1: the row's
// 2880 outputs left unwritten): the offsets, copied last and alone waited for by nothing, still held
// the case before's (R=0, the same 16 bytes freed and allocated again), so the GEMM saw no rows.
void upload(void* d, const void* h, size_t bytes) {
  const Status s = detail::memcpy_sync(d, Device::cuda(), h, Device::cpu(), bytes);
  ASSERT_TRUE(s.ok()) << s.to_string();
}

void fill_nan(void* d, size_t floats, cudaStream_t s) {
  // 0x7FC00000 is a quiet NaN; cudaMemsetAsync sets bytes, so write it with a host copy instead.
  std::vector<float> nan(floats);
  const uint32_t bits = 0x7FC00000u;
  for (auto& x : nan) std::memcpy(&x, &bits, 4);
  ASSERT_EQ(cudaMemcpyAsync(d, nan.data(), floats * 4, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
}
// Expert offsets from explicit per-expert row counts, or random ones (random_offsets) when none.
std::vector<int64_t> case_offsets(const std::vector<int64_t>& counts, int experts, int64_t rows, std::mt19937_64& rng) {
  if (counts.empty()) return random_offsets(experts, rows, rng);
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t e = 0; e < counts.size(); ++e) off[e + 1] = off[e] + counts[e];
  return off;
}

using cuda::moe::Sm90Tile;
using cuda::moe::Sm90TileOrder;

struct Case {
  Elem type;
  int experts;
  int64_t rows;  // routed rows
  int64_t n, k;
  Sm90Tile tile = Sm90Tile::kM128N256C1x1;
  std::vector<int64_t> counts = {};  // rows per expert (experts and rows must match); empty: random
  Sm90TileOrder order = Sm90TileOrder::kFixed;  // Sm90GemmArgs::tile_order
  // Launch again without the setup kernel, as the overlapped gemm2 (Sm90Overlap::kSecond), on D
  // poisoned again: the same output from the groups the first launch's setup wrote.
  bool relaunch = false;
  cuda::moe::Sm90TailSplit tail = cuda::moe::Sm90TailSplit::kOff;  // Sm90GemmArgs::tail_split
  bool parts = false;  // in two parts (launch_sm90_grouped_gemm_in_parts): the heads on `tile`, the tails on tail_tile
  bool beside = false;  // the tails launched beside the heads (PDL)
  Sm90Tile tail_tile = Sm90Tile::kM192N128C1x1;
};

std::string tile_label(Sm90Tile t) {
  switch (t) {
    case Sm90Tile::kM128N256C1x1: return "128x256 1x1";
    case Sm90Tile::kM128N256C1x2: return "128x256 1x2";
    case Sm90Tile::kM64N128C1x1: return "64x128 1x1";
    case Sm90Tile::kM64N128C1x2: return "64x128 1x2";
    case Sm90Tile::kM128N128C1x1: return "128x128 1x1";
    case Sm90Tile::kM192N128C1x1: return "192x128 1x1";
    case Sm90Tile::kM192N256C1x1: return "192x256 1x1";
  }
  return "tile " + std::to_string(static_cast<int>(t));
}

// A tile's M height (rows of one M tile).
int64_t tile_rows(Sm90Tile t) {
  switch (t) {
    case Sm90Tile::kM64N128C1x1:
    case Sm90Tile::kM64N128C1x2: return 64;
    case Sm90Tile::kM192N128C1x1:
    case Sm90Tile::kM192N256C1x1: return 192;
    default: return 128;
  }
}

// The label of a two-part launch.
std::string parts_label(bool parts, bool beside, Sm90Tile tail_tile) {
  if (!parts) return "";
  return std::string(beside ? " in parts beside" : " in parts") + " (tails on " + tile_label(tail_tile) + ")";
}

// Every tile has both configurations (the plain TMA-store epilogue and the gated one).
std::vector<Sm90Tile> all_tiles() { return {std::begin(cuda::moe::kSm90TileList), std::end(cuda::moe::kSm90TileList)}; }

std::string order_label(Sm90TileOrder o) {
  switch (o) {
    case Sm90TileOrder::kFixed: return "";
    case Sm90TileOrder::kClaimed: return " claimed";
    case Sm90TileOrder::kAuto: return " auto";
  }
  return " order " + std::to_string(static_cast<int>(o));
}

// The arguments every case fills the same way: the tile, the operands, the offsets and the scratch.
struct Operands {
  const DeviceBytes &a, &b, &d, &offsets, &scratch;
};
Sm90GemmArgs base_args(Sm90Tile tile, Elem type, const Operands& o, Elem d_type, int experts, int64_t max_rows, int64_t n,
                       int64_t k) {
  Sm90GemmArgs args;
  args.tile = tile;
  args.type = type;
  args.a = o.a.p;
  args.b = o.b.p;
  args.d = o.d.p;
  args.d_type = d_type;
  args.expert_offsets = reinterpret_cast<const int64_t*>(o.offsets.p);
  args.experts = experts;
  args.max_rows = max_rows;
  args.n = n;
  args.k = k;
  args.scratch = o.scratch.p;
  args.scratch_bytes = o.scratch.bytes();
  args.sm_count = sm_count();
  return args;
}

// One case's operands on the device: random A and B, the case's offsets (random ones, with empty
// experts, where it gives no counts), D of max_rows = rows + 5 rows (the rows past the routed ones
// must stay untouched) in float32 or the input type, and the GEMM's own scratch. run_case and the
// paired-setup test build on it.
struct CaseOperands {
  Case c;
  int64_t max_rows;
  std::vector<uint16_t> a, b;
  std::vector<int64_t> off;
  DeviceBytes da, db, dd, doff, scratch;
  mutable std::vector<double> ref;  // the float64 reference, computed on the first check
  CaseOperands(const Case& cs, std::mt19937_64& rng)
      : c(cs),
        max_rows(cs.rows + 5),
        a(random_codes(static_cast<size_t>(max_rows * cs.k), cs.type, rng)),
        b(random_codes(static_cast<size_t>(cs.experts * cs.n * cs.k), cs.type, rng)),
        off(case_offsets(cs.counts, cs.experts, cs.rows, rng)),
        da(a.size() * 2),
        db(b.size() * 2),
        dd(static_cast<size_t>(max_rows * cs.n) * 4),
        doff(off.size() * 8),
        scratch(cuda::moe::sm90_gemm_scratch_bytes(cs.experts, cs.n, cs.k, cs.type, sm_count())) {
    if (!allocated()) return;
    upload(da.p, a.data(), da.bytes());
    upload(db.p, b.data(), db.bytes());
    upload(doff.p, off.data(), doff.bytes());
  }
  bool allocated() const { return da.p && db.p && dd.p && doff.p && scratch.p; }
  Sm90GemmArgs args(Elem d_type = Elem::kF32) const {
    Sm90GemmArgs g = base_args(c.tile, c.type, {da, db, dd, doff, scratch}, d_type, c.experts, max_rows, c.n, c.k);
    g.tile_order = c.order;
    g.tail_split = c.tail;
    return g;
  }
  // The claim words the last launch left in the scratch (counter, order word, last claims).
  std::array<uint64_t, 3> claim_words() const {
    std::array<uint64_t, 3> words{};
    cudaMemcpy(words.data(), scratch.p + cuda::moe::sm90_claim_words_offset(c.experts), sizeof(words), cudaMemcpyDeviceToHost);
    return words;
  }
  // Checks the float32 D against the float64 reference and the claim counter's reset; returns D.
  std::vector<float> check(const std::string& what) const {
    if (ref.empty()) ref = reference(a, b, off, c.n, c.k, Decoder(c.type));
    std::vector<float> got(static_cast<size_t>(max_rows * c.n));
    EXPECT_EQ(cudaMemcpy(got.data(), dd.p, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess) << what;
    check_output(got, ref, c.rows, max_rows, c.n, what);
    EXPECT_EQ(claim_words()[0], 0u) << what << ": the launch's last claim resets the claim counter";
    return got;
  }
};

// Runs case `c` and checks it against the float64 reference; `out` (if given) gets the output's bits,
// `claims` (if given) the claims the launch counted (the scratch's last claim word). With `out16`, D
// is in the input type instead (as the layer's stages run it): poisoned with a 16-bit NaN code, its
// rows past the routed ones checked to keep it, its bits returned in `out16` for the caller to check
// (SixteenBitOutputIsTheFloat32OutputRounded).
void run_case(const Case& c, std::vector<float>* out = nullptr, uint64_t* claims = nullptr,
              std::vector<uint16_t>* out16 = nullptr) {
  const std::string what = tile_label(c.tile) + order_label(c.order) + (c.type == Elem::kBF16 ? " bf16" : " f16") +
                           parts_label(c.parts, c.beside, c.tail_tile) + " E=" + std::to_string(c.experts) +
                            " R=" + std::to_string(c.rows) + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k);
  SCOPED_TRACE(what);
  std::mt19937_64 rng(1234 + c.experts * 7919 + c.rows);
  const CaseOperands g(c, rng);
  ASSERT_GT(g.scratch.bytes(), 0u);
  ASSERT_TRUE(g.allocated());
  const int64_t max_rows = g.max_rows;
  cudaStream_t stream;
  MOEKIT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const uint16_t poison16 = nan16(c.type);
  std::vector<uint16_t> got16;
  if (out16) {
    got16.assign(static_cast<size_t>(max_rows * c.n), poison16);
    upload(g.dd.p, got16.data(), got16.size() * 2);
  } else {
    fill_nan(g.dd.p, static_cast<size_t>(max_rows * c.n), stream);
  }

  Sm90GemmArgs args = g.args(out16 ? c.type : Elem::kF32);
  const DeviceBytes tail_scratch(c.parts ? g.scratch.bytes() : 0);
  if (c.parts) ASSERT_TRUE(tail_scratch.p);
  const Status st =
      c.parts ? cuda::moe::launch_sm90_grouped_gemm_in_parts(args, c.tail_tile, tail_scratch.p, tail_scratch.bytes(), c.beside, stream)
              : cuda::moe::launch_sm90_grouped_gemm(args, stream);
  ASSERT_TRUE(st.ok()) << st.to_string();
  MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
  if (out16) {
    MOEKIT_ASSERT_CUDA(cudaMemcpy(got16.data(), g.dd.p, got16.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(poison_lost(got16, c.rows * c.n, poison16), 0) << what << ": elements past the routed rows were written";
    MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
    *out16 = std::move(got16);
    return;
  }
  std::vector<float> got = g.check(what);
  const uint64_t claimed = g.claim_words()[2];
  if (claims) *claims = claimed;
  if (c.relaunch) {
    fill_nan(g.dd.p, static_cast<size_t>(max_rows * c.n), stream);
    args.run_setup = false;
    args.overlap = cuda::moe::Sm90Overlap::kSecond;
    const Status again = cuda::moe::launch_sm90_grouped_gemm(args, stream);
    ASSERT_TRUE(again.ok()) << again.to_string();
    MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
    g.check(what + ", launched again without its setup");
    EXPECT_EQ(g.claim_words()[2], claimed) << what << ": the second launch claims as many tiles as the first";
  }
  MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
  if (out) *out = std::move(got);
}

TEST(Sm90GroupedGemm, Bf16LargeShapes) {
  MOEKIT_REQUIRE_SM90();
  for (Sm90Tile tile : all_tiles())
    for (int experts : {1, 8, 64})
      for (int64_t rows : {0, 1, 77, 1000}) {
        // 64 experts of 2880 x 1408 are 0.5 GB of host weights; use a smaller (still odd) shape there.
        const int64_t n = experts == 64 ? 360 : 2880, k = experts == 64 ? 712 : 1408;
        run_case({Elem::kBF16, experts, rows, n, k, tile});
      }
}

TEST(Sm90GroupedGemm, F16) {
  MOEKIT_REQUIRE_SM90();
  for (Sm90Tile tile : all_tiles()) {
    run_case({Elem::kF16, 8, 77, 2880, 1408, tile});
    run_case({Elem::kF16, 64, 1000, 360, 712, tile});
  }
}

TEST(Sm90GroupedGemm, RejectsBadArguments) {
  Sm90GemmArgs args;
  args.experts = 4;
  args.n = 100;  // not a multiple of 8
  args.k = 64;
  args.max_rows = 10;
  args.sm_count = 132;
  EXPECT_FALSE(cuda::moe::launch_sm90_grouped_gemm(args, nullptr).ok());
  args.n = 104;
  args.tail_split = static_cast<cuda::moe::Sm90TailSplit>(7);
  const Status st = cuda::moe::launch_sm90_grouped_gemm(args, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("tail_split=7 (0 off, 1 auto, 2 always)"), std::string::npos) << st.to_string();
  // A part of the rows on a tile of the wrong height (Sm90RowPart): heads on 128 rows, tails on 192.
  args.tail_split = cuda::moe::Sm90TailSplit::kOff;
  auto refused = [&](Sm90Tile tile, cuda::moe::Sm90RowPart part, const std::string& says) {
    args.tile = tile;
    args.row_part = part;
    const Status s = cuda::moe::launch_sm90_grouped_gemm(args, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.to_string().find(says), std::string::npos) << s.to_string();
  };
  refused(Sm90Tile::kM192N128C1x1, cuda::moe::Sm90RowPart::kHead, "row_part=head needs a 128-row tile");
  refused(Sm90Tile::kM64N128C1x1, cuda::moe::Sm90RowPart::kHead, "row_part=head needs a 128-row tile");
  refused(Sm90Tile::kM128N256C1x1, cuda::moe::Sm90RowPart::kTail, "row_part=tail needs a 192-row tile");
  refused(Sm90Tile::kM128N256C1x1, static_cast<cuda::moe::Sm90RowPart>(3), "row_part=3 (0 all, 1 head, 2 tail)");
  // The two-part launch takes the whole GEMM's arguments, not a part's or an overlapped pair's, and
  // a 192-row tile for the tails.
  auto refused_in_parts = [&](cuda::moe::Sm90RowPart part, cuda::moe::Sm90Overlap overlap, Sm90Tile tail_tile,
                              const std::string& says) {
    args.tile = Sm90Tile::kM128N256C1x1;
    args.row_part = part;
    args.overlap = overlap;
    const Status s = cuda::moe::launch_sm90_grouped_gemm_in_parts(args, tail_tile, nullptr, 0, false, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.to_string().find(says), std::string::npos) << s.to_string();
  };
  refused_in_parts(cuda::moe::Sm90RowPart::kHead, cuda::moe::Sm90Overlap::kNone, Sm90Tile::kM192N128C1x1, "not a part's or a pair's");
  refused_in_parts(cuda::moe::Sm90RowPart::kAll, cuda::moe::Sm90Overlap::kSecond, Sm90Tile::kM192N256C1x1, "not a part's or a pair's");
  refused_in_parts(cuda::moe::Sm90RowPart::kAll, cuda::moe::Sm90Overlap::kNone, Sm90Tile::kM128N256C1x1,
                   "tail_tile=0 is not a 192-row tile");
}

// The rule that splits an expert's rows between the two parts (sm90_tall_tail_rows): the last two
// 128-row M tiles as one tall tail of 129-192 rows when the last holds at most 64; host arithmetic.
TEST(Sm90GroupedGemm, TallTailRule) {
  using cuda::moe::sm90_tall_tail_rows;
  const std::pair<int64_t, int64_t> cases[] = {{0, 0},     {1, 0},     {64, 0},    {128, 0},   {129, 129}, {160, 160},
                                               {192, 192}, {193, 0},   {256, 0},   {257, 129}, {320, 192}, {321, 0},
                                               {384, 0},   {385, 129}, {1088, 192}, {1089, 0}};
  for (const auto& [rows, tail] : cases) EXPECT_EQ(sm90_tall_tail_rows(rows), tail) << rows << " rows";
  // The head is whole 128-row tiles wherever there is a tail.
  for (int64_t rows = 0; rows < 2000; ++rows) {
    const int64_t tail = sm90_tall_tail_rows(rows);
    if (tail == 0) continue;
    EXPECT_EQ((rows - tail) % 128, 0) << rows << " rows";
    EXPECT_GT(tail, 128) << rows << " rows";
    EXPECT_LE(tail, 192) << rows << " rows";
  }
}

// ---- the gated-activation epilogue ------------------------------------------------------------------
// gemm1 with W13's gate/up rows interleaved: D[r, j] = act(gate + bias, up + bias) with gate = column 2j
// and up = column 2j + 1 of the float64 GEMM, n / 2 columns wide, in the input type. The 16-bit D is
// poisoned with a NaN code first: rows past the routed ones must keep it.
struct GatedCase {
  Elem type;
  int experts;
  int64_t rows;
  int64_t n, k;  // n = 2 I
  Sm90Tile tile;
  Activation act;
  bool bias;
  std::vector<int64_t> counts = {};  // rows per expert (experts and rows must match); empty: random
  Sm90TileOrder order = Sm90TileOrder::kFixed;  // Sm90GemmArgs::tile_order
  cuda::moe::Sm90TailSplit tail = cuda::moe::Sm90TailSplit::kOff;  // Sm90GemmArgs::tail_split
  bool parts = false;  // in two parts (launch_sm90_grouped_gemm_in_parts)
  bool beside = false;
  Sm90Tile tail_tile = Sm90Tile::kM192N128C1x1;
};

// Checks the output against the float64 reference; `out` (if given) gets the output's bits.
void run_gated_case(const GatedCase& c, std::vector<uint16_t>* out = nullptr) {
  const std::string what = tile_label(c.tile) + order_label(c.order) + (c.type == Elem::kBF16 ? " bf16 " : " f16 ") +
                           std::string(activation_name(c.act)) + (c.bias ? " bias" : "") +
                           parts_label(c.parts, c.beside, c.tail_tile) + " E=" + std::to_string(c.experts) +
                           " R=" + std::to_string(c.rows) + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k);
  SCOPED_TRACE(what);
  std::mt19937_64 rng(4321 + c.experts * 7919 + c.rows + c.n);
  const int64_t max_rows = c.rows + 5, inter = c.n / 2;
  const auto a = random_codes(static_cast<size_t>(max_rows * c.k), c.type, rng);
  const auto b = random_codes(static_cast<size_t>(c.experts * c.n * c.k), c.type, rng);
  // A float32 bias of a few units, so that the clamp (limit 7) and the gate's negative side both bite.
  std::vector<float> bias(c.bias ? static_cast<size_t>(c.experts * c.n) : 0);
  std::uniform_real_distribution<float> ub(-4.0f, 4.0f);
  for (auto& x : bias) x = ub(rng);
  const auto off = case_offsets(c.counts, c.experts, c.rows, rng);
  const Decoder dec(c.type);
  const auto gemm = reference(a, b, off, c.n, c.k, dec);
  const ActivationParams params{c.act, 1.702f, 7.0f};
  std::vector<double> ref(static_cast<size_t>(c.rows * inter));
  {
    std::vector<double> in(static_cast<size_t>(c.n)), out(static_cast<size_t>(inter));
    for (int e = 0; e < c.experts; ++e)
      for (int64_t r = off[e]; r < off[e + 1]; ++r) {
        for (int64_t j = 0; j < c.n; ++j) in[j] = gemm[r * c.n + j] + (c.bias ? bias[e * c.n + j] : 0.0);
        cpu::apply_activation(params, GateUpLayout::kInterleaved, in, out);
        std::copy(out.begin(), out.end(), ref.begin() + r * inter);
      }
  }

  const int sms = sm_count();
  const size_t scratch_bytes = cuda::moe::sm90_gemm_scratch_bytes(c.experts, c.n, c.k, c.type, sms);
  DeviceBytes da(a.size() * 2), db(b.size() * 2), dd(static_cast<size_t>(max_rows * inter) * 2),
      doff(off.size() * 8), dbias(bias.size() * 4), scratch(scratch_bytes);
  ASSERT_TRUE(da.p && db.p && dd.p && doff.p && scratch.p && (!c.bias || dbias.p));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(da.p, a.data(), da.bytes(), cudaMemcpyHostToDevice));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(db.p, b.data(), db.bytes(), cudaMemcpyHostToDevice));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(doff.p, off.data(), doff.bytes(), cudaMemcpyHostToDevice));
  if (c.bias) MOEKIT_ASSERT_CUDA(cudaMemcpy(dbias.p, bias.data(), dbias.bytes(), cudaMemcpyHostToDevice));
  const uint16_t poison = nan16(c.type);
  std::vector<uint16_t> got(static_cast<size_t>(max_rows * inter), poison);
  MOEKIT_ASSERT_CUDA(cudaMemcpy(dd.p, got.data(), dd.bytes(), cudaMemcpyHostToDevice));

  Sm90GemmArgs args = base_args(c.tile, c.type, {da, db, dd, doff, scratch}, c.type, c.experts, max_rows, c.n, c.k);
  args.gated_activation = static_cast<int>(c.act);
  args.alpha = params.alpha;
  args.limit = params.limit;
  args.bias = c.bias ? dbias.p : nullptr;
  args.bias_type = Elem::kF32;
  args.tile_order = c.order;
  args.tail_split = c.tail;
  const DeviceBytes tail_scratch(c.parts ? scratch_bytes : 0);
  if (c.parts) ASSERT_TRUE(tail_scratch.p);
  cudaStream_t stream;  // PDL (the parts beside each other) on a stream of its own, as the stages run it
  MOEKIT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Status st =
      c.parts ? cuda::moe::launch_sm90_grouped_gemm_in_parts(args, c.tail_tile, tail_scratch.p, tail_scratch.bytes(), c.beside, stream)
              : cuda::moe::launch_sm90_grouped_gemm(args, stream);
  ASSERT_TRUE(st.ok()) << st.to_string();
  MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
  MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(got.data(), dd.p, dd.bytes(), cudaMemcpyDeviceToHost));

  // The output is the float32 activation rounded once to 16 bits: within a few units of the 16-bit
  // rounding of the float64 value, in relative L2 over the routed rows.
  const RowErrors e = row_errors([&](int64_t i) { return dec(got[i]); }, ref, c.rows, inter);
  EXPECT_EQ(e.nonfinite, 0);
  if (c.rows > 0) {
    EXPECT_LT(e.whole, c.type == Elem::kBF16 ? 6e-3 : 1e-3) << "relative L2 error " << e.whole;
    EXPECT_LT(e.worst_row, c.type == Elem::kBF16 ? 3e-2 : 5e-3) << "the worst row's relative L2 error " << e.worst_row;
  }
  EXPECT_EQ(poison_lost(got, c.rows * inter, poison), 0) << "elements past the routed rows were written";
  if (out) *out = std::move(got);
}

TEST(Sm90GroupedGemm, GatedEpilogueEveryTileAndActivation) {
  MOEKIT_REQUIRE_SM90();
  for (Sm90Tile tile : cuda::moe::kSm90TileList) {
    // N = 272 and 2880: neither a multiple of the 256- or 128-wide tile; K = 264 not of 64.
    for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kGeGLUTanh, Activation::kSwiGLUClamped})
      run_gated_case({Elem::kBF16, 8, 77, 272, 264, tile, act, true});
    run_gated_case({Elem::kBF16, 64, 1000, 2880, 264, tile, Activation::kSwiGLUClamped, true});
    run_gated_case({Elem::kF16, 8, 300, 272, 712, tile, Activation::kSwiGLU, false});
    run_gated_case({Elem::kBF16, 1, 1, 272, 264, tile, Activation::kSwiGLU, true});
    run_gated_case({Elem::kBF16, 4, 0, 272, 264, tile, Activation::kSwiGLU, true});
  }
}

// The rows of all experts together.
int64_t total_of(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

// Experts whose last M tile ends on either side of each warpgroup's rows (the cooperative tiles give
// rows 0-63 of a tile to one consumer warpgroup and 64-127 to the other), in an order that alternates
// full, half-empty and empty last tiles. 48 experts make about a dozen work tiles a CTA. Written for
// a mainloop whose empty warpgroups skipped their MMAs (docs/perf-notes.md step 22, reverted: slower);
// kept, since partial last tiles are where any such change would go wrong.
std::vector<int64_t> counts_around_warpgroup_rows() {
  const int64_t pattern[] = {1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 0, 255, 257, 320, 64, 2};
  std::vector<int64_t> counts;
  for (int i = 0; i < 48; ++i) counts.push_back(pattern[i % 16]);
  return counts;
}

TEST(Sm90GroupedGemm, LastTileRowsAroundEachWarpgroup) {
  MOEKIT_REQUIRE_SM90();
  const auto counts = counts_around_warpgroup_rows();
  const int64_t rows = total_of(counts);
  for (Sm90Tile tile : cuda::moe::kSm90TileList) {
    // N = 520: two 256-wide tiles and a short one; K = 264: four k-tiles of 64 and a short one.
    run_case({Elem::kBF16, static_cast<int>(counts.size()), rows, 520, 264, tile, counts});
    run_gated_case({Elem::kBF16, static_cast<int>(counts.size()), rows, 520, 264, tile, Activation::kSwiGLU, true, counts});
  }
}

// A GEMM in two parts (Sm90RowPart: the experts' tall tails on a 192-row tile, the rest on a
// 128-row tile, two launches): every routed row against the float64 reference, the rows past them
// still poisoned, plain (float32 and 16-bit D) and gated, at the row counts around each
// warpgroup's rows (tall tails of 129, 191, 192 rows, after a head at 257 and 320, none at 193 and
// 255), under both orders and the tail split, the parts in order and (with the automatic order)
// beside each other, the tails on 192 x 128 after every head tile and on 192 x 256 after 128 x 256;
// and random counts around 128 and 256 rows an expert, both ways, on both tail tiles.
TEST(Sm90GroupedGemm, TwoPartsCoverEveryRow) {
  MOEKIT_REQUIRE_SM90();
  const auto counts = counts_around_warpgroup_rows();
  const int64_t rows = total_of(counts);
  const int experts = static_cast<int>(counts.size());
  const std::pair<Sm90Tile, Sm90Tile> pairs[] = {{Sm90Tile::kM128N256C1x1, Sm90Tile::kM192N128C1x1},
                                                 {Sm90Tile::kM128N256C1x2, Sm90Tile::kM192N128C1x1},
                                                 {Sm90Tile::kM128N128C1x1, Sm90Tile::kM192N128C1x1},
                                                 {Sm90Tile::kM128N256C1x1, Sm90Tile::kM192N256C1x1}};
  for (const auto& [head, tail_tile] : pairs)
    for (Sm90TileOrder order : {Sm90TileOrder::kFixed, Sm90TileOrder::kAuto}) {
      Case c{Elem::kBF16, experts, rows, 520, 264, head, counts, order};
      c.parts = true;
      c.beside = order == Sm90TileOrder::kAuto;  // both launch modes on every head tile
      c.tail = cuda::moe::Sm90TailSplit::kAlways;
      c.tail_tile = tail_tile;
      std::vector<uint16_t> d16;
      run_case(c);
      run_case(c, nullptr, nullptr, &d16);
      GatedCase gc{Elem::kBF16, experts, rows, 520, 264, head, Activation::kSwiGLU, true, counts, order};
      gc.parts = true;
      gc.beside = c.beside;
      gc.tail_tile = tail_tile;
      run_gated_case(gc);
    }
  // GPT-OSS-like: 16 experts of about 128 rows, and of about 256 (half of them with a tall tail).
  for (int64_t rows_per_expert : {128, 256}) {
    std::mt19937_64 rng(77 + rows_per_expert);
    std::normal_distribution<double> spread(static_cast<double>(rows_per_expert), 11.0);
    std::vector<int64_t> around;
    for (int e = 0; e < 16; ++e) around.push_back(std::max<int64_t>(0, std::llround(spread(rng))));
    for (Sm90Tile tail_tile : {Sm90Tile::kM192N128C1x1, Sm90Tile::kM192N256C1x1})
      for (bool beside : {false, true}) {
        Case c{Elem::kF16, 16, total_of(around), 2888, 712, Sm90Tile::kM128N256C1x1, around};
        c.parts = true;
        c.beside = beside;
        c.tail_tile = tail_tile;
        run_case(c);
        GatedCase gc{Elem::kBF16, 16, total_of(around), 2880, 712, Sm90Tile::kM128N256C1x1, Activation::kSwiGLUClamped, true, around};
        gc.parts = true;
        gc.beside = beside;
        gc.tail_tile = tail_tile;
        run_gated_case(gc);
      }
  }
}

// 16-bit D, which the layer's stages use (gemm2's rows), is the float32 D rounded once to nearest
// even: the same mainloop, and an epilogue that rounds each float32 accumulator (the TMA store's
// LinearCombination with alpha 1, beta 0). To the bit, on every tile, both 16-bit types and both
// orders, at the row counts around each warpgroup's last rows, with a short last N tile
// (520 = 2 x 256 + 8) and a short last k-block (264); the rows past the routed ones keep their poison.
TEST(Sm90GroupedGemm, SixteenBitOutputIsTheFloat32OutputRounded) {
  MOEKIT_REQUIRE_SM90();
  const auto counts = counts_around_warpgroup_rows();
  const int64_t rows = total_of(counts);
  const int experts = static_cast<int>(counts.size());
  for (Sm90Tile tile : all_tiles())
    for (Elem type : {Elem::kBF16, Elem::kF16})
      for (Sm90TileOrder order : {Sm90TileOrder::kFixed, Sm90TileOrder::kClaimed}) {
        const Case c{type, experts, rows, 520, 264, tile, counts, order};
        SCOPED_TRACE(tile_label(tile) + order_label(order) + (type == Elem::kBF16 ? " bf16" : " f16"));
        std::vector<float> f32;
        std::vector<uint16_t> d16;
        run_case(c, &f32);
        run_case(c, nullptr, nullptr, &d16);
        ASSERT_EQ(f32.size(), d16.size());
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < rows * c.n; ++i) {
          const double x = f32[static_cast<size_t>(i)];
          const uint16_t want = type == Elem::kBF16 ? encode_bf16(x) : encode_f16(x);
          if (d16[static_cast<size_t>(i)] != want && differ++ == 0) first = i;
        }
        EXPECT_EQ(differ, 0) << "16-bit outputs that are not the float32 output rounded; the first at row "
                             << (first < 0 ? -1 : first / c.n) << ", column " << (first < 0 ? -1 : first % c.n);
      }
}

// The claimed tile order (tiles handed out from a global counter as CTAs free up) must compute every
// output tile as the fixed order does, to the bit: each tile is still one CTA's, over the same k
// order. N = 2056 gives 9 to 17 N tiles, so the 64 x 128 tile has about 15 tiles a CTA and the
// scheduler's ring of 8 responses wraps; the 1 x 2 cluster tiles keep the fixed order and run too.
TEST(Sm90GroupedGemm, ClaimedTileOrderGivesTheSameBits) {
  MOEKIT_REQUIRE_SM90();
  const auto counts = counts_around_warpgroup_rows();
  const int64_t rows = total_of(counts);
  const int experts = static_cast<int>(counts.size());
  for (Sm90Tile tile : cuda::moe::kSm90TileList) {
    std::vector<float> fixed, claimed;
    run_case({Elem::kBF16, experts, rows, 2056, 136, tile, counts, Sm90TileOrder::kFixed}, &fixed);
    run_case({Elem::kBF16, experts, rows, 2056, 136, tile, counts, Sm90TileOrder::kClaimed}, &claimed);
    ASSERT_EQ(fixed.size(), claimed.size());
    EXPECT_EQ(std::memcmp(fixed.data(), claimed.data(), fixed.size() * 4), 0) << tile_label(tile) << ": plain GEMM";
    std::vector<uint16_t> gated_fixed, gated_claimed;
    run_gated_case({Elem::kBF16, experts, rows, 2056, 136, tile, Activation::kSwiGLU, true, counts, Sm90TileOrder::kFixed},
                   &gated_fixed);
    run_gated_case({Elem::kBF16, experts, rows, 2056, 136, tile, Activation::kSwiGLU, true, counts, Sm90TileOrder::kClaimed},
                   &gated_claimed);
    EXPECT_EQ(gated_fixed, gated_claimed) << tile_label(tile) << ": gated epilogue";
  }
}

// The order reaches the kernel's scheduler, which the bits cannot show (every order gives the same):
// the claim counter the launch leaves in the scratch is 0 under the fixed order, and on the 1 x 2
// cluster tiles whatever the order; positive under the claimed order (each CTA claims at least once
// after its first tile); and under the automatic order as claimed on a tile without a cluster while
// every expert fits one M tile of it (64 rows on the ping-pong 64 x 128 tile, 128 on the
// cooperative tiles), as fixed once one expert holds more. 15 experts with rows of 1..64 (one
// empty) and N = 2056 make 135 tiles of 128 x 256 and 255 of 64 x 128: more than a wave of 132 SMs
// on either; then one expert of 65 rows, then one of 129.
TEST(Sm90GroupedGemm, TileOrderReachesTheScheduler) {
  MOEKIT_REQUIRE_SM90();
  std::vector<int64_t> fit;
  for (int e = 0; e < 16; ++e) fit.push_back(e == 5 ? 0 : 1 + (e * 37) % 64);
  fit[3] = 64;
  std::vector<int64_t> over64 = fit, over128 = fit;
  over64[7] = 65;
  over128[7] = 129;
  for (Sm90Tile tile : all_tiles()) {
    const bool cluster = tile == Sm90Tile::kM128N256C1x2 || tile == Sm90Tile::kM64N128C1x2;
    const int64_t tile_m = tile_rows(tile);
    for (Sm90TileOrder order : {Sm90TileOrder::kFixed, Sm90TileOrder::kClaimed, Sm90TileOrder::kAuto})
      for (const auto* counts : {&fit, &over64, &over128}) {
        int64_t rows = 0, most = 0;
        for (int64_t c : *counts) {
          rows += c;
          most = std::max(most, c);
        }
        uint64_t claims = ~uint64_t{0};
        run_case({Elem::kBF16, 16, rows, 2056, 136, tile, *counts, order}, nullptr, &claims);
        const bool claimed =
            !cluster && (order == Sm90TileOrder::kClaimed || (order == Sm90TileOrder::kAuto && most <= tile_m));
        const std::string what = tile_label(tile) + order_label(order) + ", the largest expert " + std::to_string(most) + " rows";
        if (claimed)
          EXPECT_GT(claims, 0u) << what;
        else
          EXPECT_EQ(claims, 0u) << what;
      }
  }
}

// The tail split (Sm90TailSplit): the tiles of the last round run stream-K, their k-tiles dealt to
// the CTAs, a tile's partials added by its last piece in k order. Checked against the float64
// reference with D poisoned, bitwise from run to run, and again without its setup (the flags each
// launch leaves lowered). The plan is checked too, which the bits cannot show: the kernel leaves the
// CTAs that shared the tail in the third claim word, and the host works out the same from the
// tiles (ceil(rows / tile_m) x ceil(N / tile_n) an expert), the grid (the SMs) and the k-tiles.
// K = 2056 gives 33 k-tiles of 64 (128 x 256) or 17 of 128 (128 x 128), the last one partial.
// Rows 0, 1, 3 and 77 (no whole round: kAlways splits, kAuto does not), and 36 uneven experts of
// 1-40 rows, one empty and one of 150 (two M tiles): with N = 1040 (5 N tiles of 256, 9 of 128) one
// whole round and 48 tiles left on 132 SMs (128 x 256), two and 60 (128 x 128), two and 51
// (192 x 128: every expert in one M tile), so all three split.
uint64_t expected_tail_ctas(Sm90Tile tile, const std::vector<int64_t>& counts, int64_t n, int64_t k,
                            cuda::moe::Sm90TailSplit mode) {
  const bool tall = tile == Sm90Tile::kM192N128C1x1, wide = tile == Sm90Tile::kM128N256C1x1;
  const int64_t tile_m = tile_rows(tile), tile_n = wide ? 256 : 128, tile_k = tall || wide ? 64 : 128;
  uint64_t tiles = 0;
  for (int64_t c : counts) tiles += static_cast<uint64_t>((c + tile_m - 1) / tile_m * ((n + tile_n - 1) / tile_n));
  const uint64_t grid = static_cast<uint64_t>(sm_count()), k_tiles = static_cast<uint64_t>((k + tile_k - 1) / tile_k);
  const uint64_t rem = tiles % grid, rounds = tiles / grid;
  if (mode == cuda::moe::Sm90TailSplit::kOff || tiles == 0 || rem == 0) return 0;
  if (mode == cuda::moe::Sm90TailSplit::kAuto && (rounds < 1 || rounds > 8 || 2 * rem > grid || k_tiles < 16)) return 0;
  const uint64_t ctas = std::min(grid, rem * k_tiles / 8);
  return ctas > rem ? ctas : 0;
}

TEST(Sm90GroupedGemm, TailSplitMatchesTheReferenceAndRepeatsItsBits) {
  MOEKIT_REQUIRE_SM90();
  using cuda::moe::Sm90TailSplit;
  const int64_t k = 2056;
  std::vector<int64_t> uneven;
  for (int e = 0; e < 36; ++e) uneven.push_back(e == 9 ? 0 : e == 20 ? 150 : 1 + (e * 17) % 40);
  const std::vector<std::vector<int64_t>> row_sets = {{0, 0, 0, 0}, {0, 1, 0, 0}, {2, 0, 1, 0}, {30, 0, 40, 7}, uneven};
  for (Sm90Tile tile : {Sm90Tile::kM128N256C1x1, Sm90Tile::kM128N128C1x1, Sm90Tile::kM192N128C1x1}) {
    for (const auto& counts : row_sets) {
      const int64_t n = counts.size() == 36 ? 1040 : 520;
      const int64_t rows = total_of(counts);
      const int experts = static_cast<int>(counts.size());
      for (Sm90TailSplit mode : {Sm90TailSplit::kAlways, Sm90TailSplit::kAuto}) {
        const std::string what = tile_label(tile) + (mode == Sm90TailSplit::kAlways ? " always" : " auto") + ", " +
                                 std::to_string(rows) + " rows over " + std::to_string(experts) + " experts";
        SCOPED_TRACE(what);
        Case c{Elem::kBF16, experts, rows, n, k, tile, counts};
        c.tail = mode;
        c.relaunch = true;
        std::vector<float> first, second;
        uint64_t ctas = ~uint64_t{0};
        run_case(c, &first, &ctas);
        run_case(c, &second);
        EXPECT_EQ(ctas, expected_tail_ctas(tile, counts, n, k, mode)) << "the CTAs that shared the tail";
        ASSERT_EQ(first.size(), second.size());
        EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 4), 0) << "the bits changed from run to run";
      }
    }
  }
  // The split must be seen to run somewhere above (else the checks prove nothing about it): kAlways
  // at 77 rows on any grid; kAuto on the uneven set where the grid is the H100's and H200's 132.
  EXPECT_GT(expected_tail_ctas(Sm90Tile::kM128N256C1x1, {30, 0, 40, 7}, 520, k, Sm90TailSplit::kAlways), 0u);
  if (sm_count() == 132) {
    EXPECT_GT(expected_tail_ctas(Sm90Tile::kM128N256C1x1, uneven, 1040, k, Sm90TailSplit::kAuto), 0u);
    EXPECT_GT(expected_tail_ctas(Sm90Tile::kM128N128C1x1, uneven, 1040, k, Sm90TailSplit::kAuto), 0u);
    EXPECT_GT(expected_tail_ctas(Sm90Tile::kM192N128C1x1, uneven, 1040, k, Sm90TailSplit::kAuto), 0u);
  }
  // The gated epilogue (gemm1) takes the split as the plain one does, on the 192 x 128 tile too (its
  // warpgroups side by side: each thread's partial is 96 values of its 192 x 64 half).
  for (Sm90Tile tile : {Sm90Tile::kM128N256C1x1, Sm90Tile::kM192N128C1x1})
    run_gated_case({Elem::kBF16, 36, total_of(uneven), 1040, k, tile, Activation::kSwiGLU, true, uneven,
                    Sm90TileOrder::kFixed, Sm90TailSplit::kAlways});
}

// A GEMM in parts: beside the tails (PDL) the head runs without the tail split whatever its args
// ask, so that its last round leaves SMs to the tails' CTAs (docs/perf-notes.md step 47 g); with the
// tails after it, it splits as asked. The head's third claim word counts the CTAs that shared its
// last round (0: no split); both runs are checked against the float64 reference by run_case.
TEST(Sm90GroupedGemm, TheHeadSplitsItsLastRoundOnlyWhenTheTailsRunAfterIt) {
  MOEKIT_REQUIRE_SM90();
  using cuda::moe::Sm90TailSplit;
  const auto counts = counts_around_warpgroup_rows();
  std::vector<int64_t> heads;
  for (int64_t c : counts) heads.push_back(c - cuda::moe::sm90_tall_tail_rows(c));
  const int64_t n = 520, k = 2056;
  const uint64_t expected = expected_tail_ctas(Sm90Tile::kM128N256C1x1, heads, n, k, Sm90TailSplit::kAlways);
  ASSERT_GT(expected, 0u) << "the head has no last round to split: the test would prove nothing";
  for (bool beside : {false, true}) {
    SCOPED_TRACE(beside ? "the tails beside the head" : "the tails after the head");
    Case c{Elem::kBF16, static_cast<int>(counts.size()), total_of(counts), n, k, Sm90Tile::kM128N256C1x1, counts, Sm90TileOrder::kFixed};
    c.parts = true;
    c.beside = beside;
    c.tail = Sm90TailSplit::kAlways;
    c.tail_tile = Sm90Tile::kM192N256C1x1;
    uint64_t ctas = ~uint64_t{0};
    run_case(c, nullptr, &ctas);
    EXPECT_EQ(ctas, beside ? 0u : expected) << "the CTAs that shared the head's last round";
  }
}

// The overlapped gemm2 (Sm90Overlap::kSecond) runs without its setup kernel, which gemm1's stage
// launched earlier, and its producer loads the weights of its first stages before it waits: a second
// launch without the setup gives the first one's output on every tile, in the fixed and the claimed
// order (whose counter the first launch's last CTA reset), with odd experts and K = 1096 (18 k-blocks
// of 64 or 9 of 128, the last one partial: more than any tile's stages, so the producer goes on from
// its first stages to the rest).
TEST(Sm90GroupedGemm, LaunchWithoutSetupReusesTheLastSetup) {
  MOEKIT_REQUIRE_SM90();
  for (Sm90Tile tile : all_tiles())
    for (Sm90TileOrder order : {Sm90TileOrder::kFixed, Sm90TileOrder::kClaimed}) {
      Case c{Elem::kBF16, 7, 300, 264, 1096, tile};
      c.order = order;
      c.relaunch = true;
      run_case(c);
    }
}

// The stages' overlapped pair (docs/perf-notes.md steps 27 c, 28): each GEMM's setup written as a
// job instead of launched, both jobs run by one setup kernel, then the two GEMMs without their
// setups, the first as the pair's gemm1 (Sm90Overlap::kFirst), the second as its gemm2 (kSecond:
// weights first, then the wait, then A). The two GEMMs differ in everything the jobs carry: the tile
// and order, the experts, N, K and the input type.
TEST(Sm90GroupedGemm, TwoSetupsInOneLaunch) {
  MOEKIT_REQUIRE_SM90();
  std::mt19937_64 rng(4242);
  for (Sm90Tile first_tile : all_tiles()) {
    Case c1{Elem::kBF16, 9, 251, 264, 1096, first_tile};
    c1.order = Sm90TileOrder::kAuto;
    Case c2{Elem::kF16, 13, 120, 136, 520, Sm90Tile::kM64N128C1x1};
    c2.order = Sm90TileOrder::kClaimed;
    const CaseOperands g1(c1, rng), g2(c2, rng);
    ASSERT_TRUE(g1.allocated() && g2.allocated());
    cudaStream_t stream;
    MOEKIT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    fill_nan(g1.dd.p, static_cast<size_t>(g1.max_rows * c1.n), stream);
    fill_nan(g2.dd.p, static_cast<size_t>(g2.max_rows * c2.n), stream);
    cuda::moe::Sm90SetupJob jobs[2];
    Sm90GemmArgs a1 = g1.args(), a2 = g2.args();
    a1.overlap = cuda::moe::Sm90Overlap::kFirst;
    a2.overlap = cuda::moe::Sm90Overlap::kSecond;
    a1.run_gemm = a2.run_gemm = false;
    a1.setup_job = &jobs[0];
    a2.setup_job = &jobs[1];
    for (const auto* a : {&a1, &a2}) {
      const Status st = cuda::moe::launch_sm90_grouped_gemm(*a, stream);
      ASSERT_TRUE(st.ok()) << st.to_string();
    }
    EXPECT_EQ(jobs[0].experts, 9);
    EXPECT_EQ(jobs[1].experts, 13);
    Status st = cuda::moe::launch_sm90_setups(jobs, 2, /*pdl=*/false, stream);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (auto* a : {&a1, &a2}) {
      a->run_setup = false;
      a->run_gemm = true;
      a->setup_job = nullptr;
      st = cuda::moe::launch_sm90_grouped_gemm(*a, stream);
      ASSERT_TRUE(st.ok()) << st.to_string();
    }
    MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
    g1.check("first GEMM (kFirst) on " + tile_label(first_tile));
    g2.check("second GEMM (kSecond) after " + tile_label(first_tile));
    MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
  }
}

// Bad jobs are refused, naming the job and the field, before anything is launched (so this runs
// without a GPU too).
TEST(Sm90GroupedGemm, SetupRejectsBadJobs) {
  using cuda::moe::Sm90SetupJob;
  auto refused = [](const Sm90SetupJob* jobs, int count, const std::string& says) {
    const Status st = cuda::moe::launch_sm90_setups(jobs, count, false, nullptr);
    EXPECT_FALSE(st.ok()) << says;
    EXPECT_NE(st.to_string().find(says), std::string::npos) << st.to_string();
  };
  // A job whose fields are all valid, its arrays pointing at a host array (never written: refused first).
  int64_t fake[8] = {};
  Sm90SetupJob good;
  good.offsets = fake;
  good.experts = 4;
  good.max_rows = 10;
  good.n = good.k = good.n_out = 8;
  good.shapes = reinterpret_cast<int*>(fake);
  good.words = reinterpret_cast<unsigned long long*>(fake);
  good.ptr_a = good.ptr_b = reinterpret_cast<const void**>(fake);
  good.ptr_d = reinterpret_cast<void**>(fake);
  good.stride_a = good.stride_b = good.stride_d = fake;
  Sm90SetupJob jobs[3] = {good, good, good};
  refused(jobs, 0, "0 jobs");
  refused(jobs, 3, "3 jobs");
  refused(nullptr, 1, "null jobs");
  jobs[1].experts = 0;
  refused(jobs, 2, "job 1: experts=0");
  jobs[1] = good;
  jobs[0].k = -8;
  refused(jobs, 2, "job 0: n=8, k=-8");
  jobs[0] = good;
  jobs[1].stride_d = nullptr;
  refused(jobs, 2, "job 1: null offsets or scratch array");
  jobs[1] = good;
  jobs[0].split = 0x1000 | 8;  // the tail split's area 8 bytes off a 16-byte boundary
  refused(jobs, 2, "job 0: split=4104 (the tail split's area must be 16-byte aligned)");
  jobs[0] = good;
  jobs[1].part = static_cast<cuda::moe::Sm90RowPart>(5);
  refused(jobs, 2, "job 1: part=5 (0 all, 1 head, 2 tail)");
}

TEST(Sm90GroupedGemm, GatedEpilogueRejectsBadArguments) {
  MOEKIT_REQUIRE_SM90();
  const int sms = sm_count();
  const size_t scratch_bytes = cuda::moe::sm90_gemm_scratch_bytes(4, 272, 264, Elem::kBF16, sms);
  DeviceBytes buf(1 << 20), doff(5 * 8), scratch(scratch_bytes);
  ASSERT_TRUE(buf.p && doff.p && scratch.p);
  MOEKIT_ASSERT_CUDA(cudaMemset(doff.p, 0, doff.bytes()));
  Sm90GemmArgs args = base_args(Sm90Tile::kM128N256C1x1, Elem::kBF16, {buf, buf, buf, doff, scratch}, Elem::kBF16, 4, 8, 272, 264);
  args.gated_activation = static_cast<int>(Activation::kReLU2);  // not gated
  Status st = cuda::moe::launch_sm90_grouped_gemm(args, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("gated_activation"), std::string::npos) << st.to_string();
  args.gated_activation = static_cast<int>(Activation::kSwiGLU);
  args.d_type = Elem::kF32;  // the gated epilogue writes the input type only
  st = cuda::moe::launch_sm90_grouped_gemm(args, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.message().find("d_type=f32"), std::string::npos) << st.to_string();
}

// One capture, replayed twice: the second replay after the expert offsets changed on the device (the
// per-group shapes are read on the device, so the same graph serves any routing).
TEST(Sm90GroupedGemm, GraphCaptureAndReplay) {
  MOEKIT_REQUIRE_SM90();
  const Elem type = Elem::kBF16;
  const int experts = 8;
  const int64_t n = 2880, k = 1408, max_rows = 600;
  std::mt19937_64 rng(99);
  const auto a = random_codes(static_cast<size_t>(max_rows * k), type, rng);
  const auto b = random_codes(static_cast<size_t>(experts * n * k), type, rng);
  const auto off1 = random_offsets(experts, 500, rng);
  const auto off2 = random_offsets(experts, 313, rng);
  const Decoder dec(type);

  const int sms = sm_count();
  const size_t scratch_bytes = cuda::moe::sm90_gemm_scratch_bytes(experts, n, k, type, sms);
  DeviceBytes da(a.size() * 2), db(b.size() * 2), dd(static_cast<size_t>(max_rows * n) * 4), doff(off1.size() * 8),
      scratch(scratch_bytes);
  ASSERT_TRUE(da.p && db.p && dd.p && doff.p && scratch.p);
  MOEKIT_ASSERT_CUDA(cudaMemcpy(da.p, a.data(), da.bytes(), cudaMemcpyHostToDevice));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(db.p, b.data(), db.bytes(), cudaMemcpyHostToDevice));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(doff.p, off1.data(), doff.bytes(), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  MOEKIT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Sm90GemmArgs args = base_args(Sm90Tile::kM128N256C1x1, type, {da, db, dd, doff, scratch}, Elem::kF32, experts, max_rows, n, k);

  cudaGraph_t graph = nullptr;
  MOEKIT_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status st = cuda::moe::launch_sm90_grouped_gemm(args, stream);
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(st.ok()) << st.to_string();
  MOEKIT_ASSERT_CUDA(end);
  cudaGraphExec_t exec = nullptr;
  MOEKIT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  std::vector<float> got(static_cast<size_t>(max_rows * n));
  for (const auto* off : {&off1, &off2}) {
    MOEKIT_ASSERT_CUDA(cudaMemcpy(doff.p, off->data(), doff.bytes(), cudaMemcpyHostToDevice));
    MOEKIT_ASSERT_CUDA(cudaDeviceSynchronize());  // the copy's DMA may outlast cudaMemcpy; the graph runs on `stream`
    fill_nan(dd.p, got.size(), stream);
    MOEKIT_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
    MOEKIT_ASSERT_CUDA(cudaMemcpy(got.data(), dd.p, got.size() * 4, cudaMemcpyDeviceToHost));
    const auto ref = reference(a, b, *off, n, k, dec);
    check_output(got, ref, off->back(), max_rows, n, "graph replay, R=" + std::to_string(off->back()));
  }
  MOEKIT_ASSERT_CUDA(cudaGraphExecDestroy(exec));
  MOEKIT_ASSERT_CUDA(cudaGraphDestroy(graph));
  MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace moekit
