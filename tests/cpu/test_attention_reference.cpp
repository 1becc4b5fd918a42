// The CPU reference of shared-context attention against a naive implementation written here
// (per query, float64, the whole softmax over the concatenated keys), hand-checkable cases, the
// causal rule, empty inputs, the cache, memory accounting, backend selection and every error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "attention_test_util.h"
#include "cpu/attention_reference.h"
#include "moekit/attention.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

using testing::AttnCase;
using testing::HostAttention;
using testing::make_host_attention;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- the naive oracle ------------------------------------------------------------------------------
struct Naive {
  std::vector<double> out;  // [B, Hq, Lq, D]
  std::vector<double> lse;  // [B, Hq, Lq]
};

// Query i of sequence b: its keys are the context of its kv head, then buffer positions j with
// j < len and j <= len - Lq + i; one softmax over all of them.
Naive naive_attention(const HostAttention& h) {
  const AttnCase& c = h.c;
  const int G = c.q_heads / c.kv_heads, D = c.head_dim;
  const double scale = c.scale != 0.0f ? c.scale : 1.0 / std::sqrt(static_cast<double>(D));
  auto doubles = [](const Tensor& t) {
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = load_element(t.data(), t.dtype(), i);
    return v;
  };
  const std::vector<double> q = doubles(h.q), ctx_k = doubles(h.ctx_k), ctx_v = doubles(h.ctx_v), buf_k = doubles(h.buf_k),
                            buf_v = doubles(h.buf_v);
  Naive r;
  for (int b = 0; b < c.batch; ++b) {
    const int64_t len = h.lens.data_as<int32_t>()[b];
    for (int qh = 0; qh < c.q_heads; ++qh) {
      const int kvh = qh / G;
      for (int i = 0; i < c.q_len; ++i) {
        std::vector<std::vector<double>> keys, values;
        for (int64_t j = 0; j < c.ctx; ++j) {
          std::vector<double> k(D), v(D);
          for (int d = 0; d < D; ++d) {
            k[d] = ctx_k[(kvh * c.ctx + j) * D + d];
            v[d] = ctx_v[(kvh * c.ctx + j) * D + d];
          }
          keys.push_back(k), values.push_back(v);
        }
        for (int64_t j = 0; j < len; ++j) {
          if (j > len - c.q_len + i) continue;  // the causal rule
          std::vector<double> k(D), v(D);
          for (int d = 0; d < D; ++d) {
            k[d] = buf_k[((int64_t{b} * c.kv_heads + kvh) * c.cap + j) * D + d];
            v[d] = buf_v[((int64_t{b} * c.kv_heads + kvh) * c.cap + j) * D + d];
          }
          keys.push_back(k), values.push_back(v);
        }
        const int64_t row = (int64_t{b} * c.q_heads + qh) * c.q_len + i;
        std::vector<double> scores;
        for (const auto& k : keys) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += q[row * D + d] * k[d];
          scores.push_back(scale * s);
        }
        double m = -kInf;
        for (double s : scores) m = std::max(m, s);
        double z = 0;
        for (double s : scores) z += std::exp(s - m);
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (size_t j = 0; j < keys.size(); ++j) o += std::exp(scores[j] - m) / z * values[j][d];
          r.out.push_back(keys.empty() ? 0.0 : o);
        }
        r.lse.push_back(keys.empty() ? -kInf : m + std::log(z));
      }
    }
  }
  return r;
}

// One rounding to `dtype` (half a unit in the last place, doubled for slack), plus the spacing of
// f16's subnormals, where the relative bound does not hold.
double store_tolerance(DType dtype, double x) {
  const double eps = dtype == DType::kBF16 ? 0x1p-8 : dtype == DType::kF16 ? 0x1p-11 : 0x1p-24;
  return eps * std::abs(x) + (dtype == DType::kF16 ? 0x1p-24 : 1e-12);
}

void expect_matches_naive(const HostAttention& h, const Naive& n) {
  const int64_t count = static_cast<int64_t>(n.out.size());
  ASSERT_EQ(count, h.out.numel());
  int64_t bad = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double got = load_element(h.out.data(), h.c.dtype, i);
    if (!(std::abs(got - n.out[i]) <= store_tolerance(h.c.dtype, n.out[i])) && bad++ < 5)
      ADD_FAILURE() << "out[" << i << "] = " << got << ", naive " << n.out[i];
  }
  for (int64_t i = 0; i < static_cast<int64_t>(n.lse.size()); ++i) {
    const double got = h.lse.data_as<float>()[i];
    if (n.lse[i] == -kInf) {
      if (got != -kInf && bad++ < 5) ADD_FAILURE() << "lse[" << i << "] = " << got << ", expected -inf";
    } else if (!(std::abs(got - n.lse[i]) <= 1e-6 * std::max(1.0, std::abs(n.lse[i]))) && bad++ < 5) {
      ADD_FAILURE() << "lse[" << i << "] = " << got << ", naive " << n.lse[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

Status run(const HostAttention& h, AttentionBackend backend = AttentionBackend::kCpuReference) {
  auto bytes = attention_workspace_size(h.c.params(), h.inputs(), backend);
  if (!bytes.ok()) return bytes.status();
  std::vector<uint8_t> ws(*bytes);
  auto info = shared_context_attention(h.c.params(), h.inputs(), h.outputs(), backend, ws.data(), ws.size());
  return info.status();
}

// ---- hand-checkable cases --------------------------------------------------------------------------

TEST(AttentionReference, OneKeyGivesItsValue) {
  HostAttention h = make_host_attention({.head_dim = 16, .ctx = 1, .cap = 0, .dtype = DType::kF32}, 1);
  ASSERT_TRUE(run(h).ok());
  EXPECT_EQ(std::memcmp(h.out.data(), h.ctx_v.data(), 16 * sizeof(float)), 0);
  double s = 0;
  for (int d = 0; d < 16; ++d) s += double{h.q.data_as<float>()[d]} * h.ctx_k.data_as<float>()[d];
  EXPECT_FLOAT_EQ(h.lse.data_as<float>()[0], static_cast<float>(s / 4.0));  // scale 1/sqrt(16)
}

TEST(AttentionReference, TwoEqualKeysGiveTheMeanOfTheirValues) {
  HostAttention h = make_host_attention({.head_dim = 32, .ctx = 1, .cap = 1, .dtype = DType::kF32, .scale = 0.5f}, 2);
  std::memcpy(h.buf_k.data(), h.ctx_k.data(), 32 * sizeof(float));  // the buffer key equals the context key
  h.lens.data_as<int32_t>()[0] = 1;
  ASSERT_TRUE(run(h).ok());
  double s = 0;
  for (int d = 0; d < 32; ++d) {
    const double mean = (double{h.ctx_v.data_as<float>()[d]} + h.buf_v.data_as<float>()[d]) / 2;
    EXPECT_FLOAT_EQ(h.out.data_as<float>()[d], static_cast<float>(mean)) << d;
    s += double{h.q.data_as<float>()[d]} * h.ctx_k.data_as<float>()[d];
  }
  EXPECT_FLOAT_EQ(h.lse.data_as<float>()[0], static_cast<float>(0.5 * s + std::log(2.0)));
}

TEST(AttentionReference, CausalMaskOnHandValues) {
  // Zero keys: every visible key weighs the same. Lq = 2, two buffer entries, no context:
  // query 0 is buffer position 0 (sees v0), query 1 is position 1 (sees v0 and v1).
  HostAttention h = make_host_attention({.q_len = 2, .head_dim = 16, .ctx = 0, .cap = 3, .dtype = DType::kF32}, 3);
  std::memset(h.buf_k.data(), 0, static_cast<size_t>(h.buf_k.storage_bytes()));
  h.lens.data_as<int32_t>()[0] = 2;
  ASSERT_TRUE(run(h).ok());
  const float* v = h.buf_v.data_as<float>();
  const float* out = h.out.data_as<float>();
  for (int d = 0; d < 16; ++d) {
    EXPECT_EQ(out[d], v[d]);
    EXPECT_FLOAT_EQ(out[16 + d], static_cast<float>((double{v[d]} + v[16 + d]) / 2));
  }
  EXPECT_FLOAT_EQ(h.lse.data_as<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(h.lse.data_as<float>()[1], static_cast<float>(std::log(2.0)));
}

TEST(AttentionReference, BufferShorterThanTheQueriesLeavesEarlyQueriesTheContextOnly) {
  // Lq = 3 with one buffer entry: queries 0 and 1 are "before" the buffer and see none of it.
  HostAttention h = make_host_attention({.q_len = 3, .head_dim = 16, .ctx = 0, .cap = 2, .dtype = DType::kBF16}, 4);
  h.lens.data_as<int32_t>()[0] = 1;
  ASSERT_TRUE(run(h).ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(h.lse.data_as<float>()[i], -kInf) << i;
    for (int d = 0; d < 16; ++d) EXPECT_EQ(load_element(h.out.data(), DType::kBF16, i * 16 + d), 0.0) << i;
  }
  EXPECT_EQ(std::memcmp(static_cast<char*>(h.out.data()) + 2 * 16 * 2, h.buf_v.data(), 16 * 2), 0);
}

TEST(AttentionReference, NothingToAttendGivesZerosAndMinusInfinity) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    HostAttention h = make_host_attention({.batch = 2, .q_heads = 2, .kv_heads = 1, .q_len = 2, .head_dim = 32, .ctx = 0, .cap = 5,
                                           .dtype = dtype},
                                          5);
    std::memset(h.lens.data(), 0, 2 * sizeof(int32_t));
    ASSERT_TRUE(run(h).ok());
    for (int64_t i = 0; i < h.out.numel(); ++i) ASSERT_EQ(load_element(h.out.data(), dtype, i), 0.0) << i;
    for (int64_t i = 0; i < h.lse.numel(); ++i) ASSERT_EQ(h.lse.data_as<float>()[i], -kInf) << i;

    // The same with the context and the buffer not given at all.
    testing::poison(h.out);
    const AttentionInputs bare{.q = h.q, .context_k = {}, .context_v = {}, .buffer_k = {}, .buffer_v = {}, .buffer_lengths = {}};
    auto info = shared_context_attention(h.c.params(), bare, h.outputs(), AttentionBackend::kCpuReference, nullptr, 0);
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    for (int64_t i = 0; i < h.out.numel(); ++i) ASSERT_EQ(load_element(h.out.data(), dtype, i), 0.0) << i;
  }
}

// ---- the naive oracle at odd sizes -------------------------------------------------------------------

TEST(AttentionReference, MatchesNaiveAtOddSizes) {
  struct Heads {
    int q, kv;
  };
  uint32_t seed = 100;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (int D : {16, 32, 64, 128})
      for (int B : {1, 3})
        for (int64_t ctx : {0, 1, 100})
          for (int64_t cap : {0, 1, 37})
            for (Heads heads : {Heads{2, 2}, Heads{4, 2}, Heads{3, 1}})
              for (int Lq : {1, 3}) {
                const AttnCase c{.batch = B, .q_heads = heads.q, .kv_heads = heads.kv, .q_len = Lq, .head_dim = D, .ctx = ctx,
                                 .cap = cap, .dtype = dtype};
                SCOPED_TRACE(c.name());
                HostAttention h = make_host_attention(c, ++seed);
                ASSERT_TRUE(run(h).ok());
                expect_matches_naive(h, naive_attention(h));
                if (HasFailure()) return;
              }
}

TEST(AttentionReference, MatchesNaiveWithAnExplicitScaleAndLargeScores) {
  // Scores up to +-200: the max subtraction has to work.
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 2, .head_dim = 64, .ctx = 50, .cap = 9, .dtype = DType::kF32,
                   .scale = 2.0f};
  HostAttention h = make_host_attention(c, 7, -1.5, 1.5);
  ASSERT_TRUE(run(h).ok());
  expect_matches_naive(h, naive_attention(h));
}

// ---- backends ---------------------------------------------------------------------------------------

TEST(AttentionReference, ReplicatedEqualsTheReferenceExactly) {
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 3, .head_dim = 32, .ctx = 100, .cap = 37, .dtype = DType::kBF16};
  HostAttention ref = make_host_attention(c, 8), rep = make_host_attention(c, 8);
  ASSERT_TRUE(run(ref).ok());
  ASSERT_TRUE(run(rep, AttentionBackend::kReplicated).ok());
  EXPECT_EQ(std::memcmp(ref.out.data(), rep.out.data(), static_cast<size_t>(ref.out.storage_bytes())), 0);
  EXPECT_EQ(std::memcmp(ref.lse.data(), rep.lse.data(), static_cast<size_t>(ref.lse.storage_bytes())), 0);
  // Its workspace is the context copied per sequence: K and V of [B, Hkv, Nctx + Nbuf_max, D].
  auto bytes = attention_workspace_size(c.params(), rep.inputs(), AttentionBackend::kReplicated);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, size_t{2} * 3 * 2 * (100 + 37) * 32 * 2);
}

TEST(AttentionReference, ReplicatedChecksItsWorkspace) {
  HostAttention h = make_host_attention({.batch = 2, .head_dim = 16, .ctx = 4, .cap = 2, .dtype = DType::kF32}, 9);
  std::vector<uint8_t> ws(100);
  auto info = shared_context_attention(h.c.params(), h.inputs(), h.outputs(), AttentionBackend::kReplicated, ws.data(), ws.size());
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("workspace: 100 bytes given, the replicated backend needs 1536"), std::string::npos)
      << info.status().message();
  EXPECT_TRUE(std::isnan(h.out.data_as<float>()[0]));  // nothing written
}

TEST(AttentionReference, AutoOnHostTensorsRunsTheReference) {
  HostAttention h = make_host_attention({.head_dim = 16, .ctx = 3, .cap = 0, .dtype = DType::kF32}, 10);
  auto info = shared_context_attention(h.c.params(), h.inputs(), h.outputs(), AttentionBackend::kAuto, nullptr, 0);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->backend, AttentionBackend::kCpuReference);
  EXPECT_TRUE(info->warning.empty());
}

TEST(AttentionReference, CudaOnHostTensorsFallsBackWithAWarning) {
  HostAttention h = make_host_attention({.batch = 2, .q_heads = 2, .kv_heads = 1, .head_dim = 32, .ctx = 5, .cap = 4,
                                         .dtype = DType::kBF16},
                                        11);
  auto bytes = attention_workspace_size(h.c.params(), h.inputs(), AttentionBackend::kCuda);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 0u);  // sized for the backend that will run
  auto info = shared_context_attention(h.c.params(), h.inputs(), h.outputs(), AttentionBackend::kCuda, nullptr, 0);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->requested, AttentionBackend::kCuda);
  EXPECT_EQ(info->backend, AttentionBackend::kCpuReference);
  EXPECT_NE(info->warning.find("backend cuda is not available ("), std::string::npos) << info->warning;
  EXPECT_NE(info->warning.find("ran cpu_reference instead"), std::string::npos) << info->warning;
  expect_matches_naive(h, naive_attention(h));
}

TEST(AttentionReference, BackendNames) {
  for (AttentionBackend b : {AttentionBackend::kAuto, AttentionBackend::kCpuReference, AttentionBackend::kCuda,
                             AttentionBackend::kReplicated})
    EXPECT_EQ(parse_attention_backend(attention_backend_name(b)), b);
  EXPECT_EQ(parse_attention_backend("cpu"), AttentionBackend::kCpuReference);
  EXPECT_FALSE(parse_attention_backend("flash").has_value());
}

// ---- errors -----------------------------------------------------------------------------------------

TEST(AttentionReference, BadInputsGiveClearErrorsAndWriteNothing) {
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 1, .head_dim = 32, .ctx = 5, .cap = 4, .dtype = DType::kBF16};
  HostAttention h = make_host_attention(c, 12);
  Tensor q3 = testing::host_tensor(DType::kBF16, {3, 4, 32});
  Tensor q_f32 = testing::host_tensor(DType::kF32, {3, 4, 1, 32});
  Tensor ctx_short = testing::host_tensor(DType::kBF16, {2, 4, 32});
  Tensor buf_b2 = testing::host_tensor(DType::kBF16, {2, 2, 4, 32});
  Tensor lens_i64 = testing::host_tensor(DType::kI64, {3});
  Tensor lens_4 = testing::host_tensor(DType::kI32, {4});
  Tensor out_lq2 = testing::host_tensor(DType::kBF16, {3, 4, 2, 32});
  Tensor lse_bf16 = testing::host_tensor(DType::kBF16, {3, 4, 1});
  const int64_t strides[] = {256, 32, 32, 1};  // every other row of a [6, 4, 1, 32] tensor
  const TensorView q_strided = TensorView::create(h.q.data(), DType::kBF16, h.q.shape(), strides).value();

  struct Bad {
    const char* expect;
    AttentionParams p;
    AttentionInputs in;
    AttentionOutputs out;
  };
  const AttentionParams p = c.params();
  auto with = [&](auto f) {
    Bad b{"", p, h.inputs(), h.outputs()};
    f(b);
    return b;
  };
  const std::vector<Bad> cases = {
      with([](Bad& b) { b.expect = "batch=-1 must be >= 0", b.p.batch = -1; }),
      with([](Bad& b) { b.expect = "num_q_heads=0 must be >= 1", b.p.num_q_heads = 0; }),
      with([](Bad& b) { b.expect = "num_kv_heads=0 must be >= 1", b.p.num_kv_heads = 0; }),
      with([](Bad& b) { b.expect = "num_q_heads=4 is not a multiple of num_kv_heads=3", b.p.num_kv_heads = 3; }),
      with([](Bad& b) { b.expect = "q_len=0 must be >= 1", b.p.q_len = 0; }),
      with([](Bad& b) { b.expect = "head_dim=48 is not supported (16, 32, 64 or 128)", b.p.head_dim = 48; }),
      with([](Bad& b) { b.expect = "softmax_scale=nan must be finite", b.p.softmax_scale = std::nanf(""); }),
      with([](Bad& b) { b.expect = "dtype=e4m3 is not supported (f32, f16 or bf16)", b.p.dtype = DType::kE4M3; }),
      with([&](Bad& b) { b.expect = "q: expected 4 dims [B, Hq, Lq, D], got 3 ([3, 4, 32])", b.in.q = q3; }),
      with([&](Bad& b) { b.expect = "q: required tensor is missing (expected [B, Hq, Lq, D])", b.in.q = {}; }),
      with([](Bad& b) { b.expect = "q: shape [3, 4, 1, 32] does not match [B, Hq, Lq, D] = [2, 4, 1, 32]", b.p.batch = 2; }),
      with([&](Bad& b) { b.expect = "q: dtype f32 does not match params.dtype=bf16", b.in.q = q_f32; }),
      with([&](Bad& b) { b.expect = "q: tensor bf16[3, 4, 1, 32] cpu must be contiguous", b.in.q = q_strided; }),
      with([&](Bad& b) {
        b.expect = "context_v: shape [2, 4, 32] does not match [Hkv, Nctx, D] (context_k's shape) = [2, 5, 32]",
        b.in.context_v = ctx_short;
      }),
      with([](Bad& b) { b.expect = "context_v: missing while context_k is given", b.in.context_v = {}; }),
      with([](Bad& b) { b.expect = "context_k: shape [2, 5, 32] does not match [Hkv, Nctx, D] = [1, *, 32]", b.p.num_kv_heads = 1; }),
      with([&](Bad& b) { b.expect = "buffer_k: shape [2, 2, 4, 32] does not match [B, Hkv, Nbuf_max, D] = [3, 2, *, 32]", b.in.buffer_k = buf_b2; }),
      with([](Bad& b) { b.expect = "buffer_k: missing while buffer_v is given", b.in.buffer_k = {}; }),
      with([](Bad& b) { b.expect = "buffer_lengths: required tensor is missing (expected [B])", b.in.buffer_lengths = {}; }),
      with([&](Bad& b) { b.expect = "buffer_lengths: dtype i64 does not match the required dtype=i32", b.in.buffer_lengths = lens_i64; }),
      with([&](Bad& b) { b.expect = "buffer_lengths: shape [4] does not match [B] = [3]", b.in.buffer_lengths = lens_4; }),
      with([](Bad& b) {
        b.expect = "buffer_lengths: given, but buffer_k and buffer_v are not";
        b.in.buffer_k = {}, b.in.buffer_v = {};
      }),
      with([&](Bad& b) { b.expect = "out: shape [3, 4, 2, 32] does not match [B, Hq, Lq, D] = [3, 4, 1, 32]", b.out.out = out_lq2; }),
      with([](Bad& b) { b.expect = "out: required tensor is missing", b.out.out = {}; }),
      with([&](Bad& b) { b.expect = "lse: dtype bf16 does not match the required dtype=f32", b.out.lse = lse_bf16; }),
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.expect);
    auto info = shared_context_attention(b.p, b.in, b.out, AttentionBackend::kCpuReference, nullptr, 0);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(info.status().message().find(b.expect), std::string::npos) << info.status().message();
  }
  for (int64_t i = 0; i < h.out.numel(); ++i) ASSERT_TRUE(std::isnan(load_element(h.out.data(), DType::kBF16, i)));
}

TEST(AttentionReference, BufferLengthsOutOfRangeAreErrors) {
  HostAttention h = make_host_attention({.batch = 3, .head_dim = 16, .ctx = 2, .cap = 37, .dtype = DType::kF32}, 13);
  for (int32_t bad : {38, -1}) {
    h.lens.data_as<int32_t>()[1] = bad;
    const Status s = run(h);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(fmt::format("buffer_lengths[1]={} is outside [0, Nbuf_max=37]", bad)), std::string::npos) << s.message();
    EXPECT_TRUE(std::isnan(h.out.data_as<float>()[0]));
  }
}

TEST(AttentionReference, CpuReferenceRefusesDeviceTensors) {
  HostAttention h = make_host_attention({.head_dim = 16, .ctx = 2, .cap = 0, .dtype = DType::kF32}, 14);
  // A view that claims to be on a GPU (never dereferenced: the call must refuse first).
  AttentionInputs in = h.inputs();
  AttentionOutputs out = h.outputs();
  const auto on_gpu = [](const TensorView& t) {
    return TensorView::create(t.data(), t.dtype(), t.shape(), {}, Device::cuda(0)).value();
  };
  in = {.q = on_gpu(in.q), .context_k = on_gpu(in.context_k), .context_v = on_gpu(in.context_v), .buffer_k = on_gpu(in.buffer_k),
        .buffer_v = on_gpu(in.buffer_v), .buffer_lengths = on_gpu(in.buffer_lengths)};
  out = {.out = on_gpu(out.out), .lse = on_gpu(out.lse)};
  auto info = shared_context_attention(h.c.params(), in, out, AttentionBackend::kCpuReference, nullptr, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("backend cpu_reference needs host tensors; q is on cuda:0"), std::string::npos)
      << info.status().message();
  // Mixed devices are refused too.
  AttentionInputs mixed = h.inputs();
  mixed.context_v = on_gpu(mixed.context_v);
  info = shared_context_attention(h.c.params(), mixed, h.outputs(), AttentionBackend::kCpuReference, nullptr, 0);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("context_v: on cuda:0 but q is on cpu; all tensors must be on one device"),
            std::string::npos)
      << info.status().message();
}

// ---- the cache --------------------------------------------------------------------------------------

SharedContextCacheConfig small_config(DType dtype = DType::kBF16) {
  return {.batch = 3, .num_kv_heads = 2, .head_dim = 32, .max_context = 120, .buffer_capacity = 6, .dtype = dtype};
}

TEST(AttentionCache, PrefillAndAppendsEqualTheTensorsBuiltDirectly) {
  const SharedContextCacheConfig cfg = small_config();
  auto cache = SharedContextCache::create(cfg);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  // The same problem built directly: context of 100, buffer lengths 3, 1, 4.
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 1, .head_dim = 32, .ctx = 100, .cap = 6, .dtype = DType::kBF16};
  HostAttention direct = make_host_attention(c, 15);
  const std::vector<int32_t> lens = {3, 1, 4};
  std::memcpy(direct.lens.data(), lens.data(), 3 * sizeof(int32_t));
  ASSERT_TRUE(cache->prefill(direct.ctx_k, direct.ctx_v).ok());
  EXPECT_EQ(cache->context_len(), 100);

  // Appends: one entry each (position 0), then {2, 0, 2} of 2 (positions 1-2), then {0, 0, 1} of 1 (position 3).
  auto append_from_direct = [&](int64_t first, int64_t L, std::vector<int32_t> counts) {
    Tensor k = testing::host_tensor(DType::kBF16, {3, 2, L, 32}), v = testing::host_tensor(DType::kBF16, {3, 2, L, 32});
    for (int64_t bh = 0; bh < 6; ++bh)
      for (int64_t j = 0; j < L; ++j)
        for (int64_t d = 0; d < 32; ++d) {
          const int64_t src = (bh * 6 + std::min<int64_t>(first + j, 5)) * 32 + d, dst = (bh * L + j) * 32 + d;
          k.data_as<uint16_t>()[dst] = direct.buf_k.data_as<uint16_t>()[src];
          v.data_as<uint16_t>()[dst] = direct.buf_v.data_as<uint16_t>()[src];
        }
    return cache->append(k, v, counts);
  };
  ASSERT_TRUE(append_from_direct(0, 1, {}).ok());
  ASSERT_TRUE(append_from_direct(1, 2, {2, 0, 2}).ok());
  ASSERT_TRUE(append_from_direct(3, 1, {0, 0, 1}).ok());
  EXPECT_EQ(std::vector<int32_t>(cache->buffer_lengths().begin(), cache->buffer_lengths().end()), lens);

  testing::poison(direct.out);
  ASSERT_TRUE(run(direct).ok());
  Tensor out = testing::host_tensor(DType::kBF16, {3, 4, 1, 32}), lse = testing::host_tensor(DType::kF32, {3, 4, 1});
  auto info = cache->attend(direct.q, {.out = out, .lse = lse});
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->backend, AttentionBackend::kCpuReference);
  EXPECT_EQ(std::memcmp(out.data(), direct.out.data(), static_cast<size_t>(out.storage_bytes())), 0);
  EXPECT_EQ(std::memcmp(lse.data(), direct.lse.data(), static_cast<size_t>(lse.storage_bytes())), 0);
}

TEST(AttentionCache, TeacherForcingEqualsDecodingOneQueryAtATime) {
  // One call with Lq = 3 after appending three entries equals three decode steps (append one
  // entry, attend with that step's query): the causal rule of moekit/attention.h.
  const SharedContextCacheConfig cfg = small_config(DType::kF32);
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 3, .head_dim = 32, .ctx = 50, .cap = 6, .dtype = DType::kF32};
  HostAttention h = make_host_attention(c, 16);
  auto all = SharedContextCache::create(cfg), steps = SharedContextCache::create(cfg);
  ASSERT_TRUE(all.ok() && steps.ok());
  ASSERT_TRUE(all->prefill(h.ctx_k, h.ctx_v).ok());
  ASSERT_TRUE(steps->prefill(h.ctx_k, h.ctx_v).ok());
  // New entries [3, 2, 3, 32] and a first entry so the buffers do not start empty.
  Tensor first_k = testing::host_tensor(DType::kF32, {3, 2, 1, 32}), first_v = testing::host_tensor(DType::kF32, {3, 2, 1, 32});
  Tensor new_k = testing::host_tensor(DType::kF32, {3, 2, 3, 32}), new_v = testing::host_tensor(DType::kF32, {3, 2, 3, 32});
  std::mt19937 rng(17);
  for (const Tensor* t : {&first_k, &first_v, &new_k, &new_v}) testing::fill_uniform(*t, rng);
  ASSERT_TRUE(all->append(first_k, first_v).ok());
  ASSERT_TRUE(steps->append(first_k, first_v).ok());
  ASSERT_TRUE(all->append(new_k, new_v).ok());
  Tensor out3 = testing::host_tensor(DType::kF32, {3, 4, 3, 32}), lse3 = testing::host_tensor(DType::kF32, {3, 4, 3});
  ASSERT_TRUE(all->attend(h.q, {.out = out3, .lse = lse3}).ok());

  for (int i = 0; i < 3; ++i) {
    Tensor k = testing::host_tensor(DType::kF32, {3, 2, 1, 32}), v = testing::host_tensor(DType::kF32, {3, 2, 1, 32});
    Tensor q = testing::host_tensor(DType::kF32, {3, 4, 1, 32});
    for (int64_t bh = 0; bh < 6; ++bh) {
      std::memcpy(k.data_as<float>() + bh * 32, new_k.data_as<float>() + (bh * 3 + i) * 32, 32 * sizeof(float));
      std::memcpy(v.data_as<float>() + bh * 32, new_v.data_as<float>() + (bh * 3 + i) * 32, 32 * sizeof(float));
    }
    for (int64_t bq = 0; bq < 12; ++bq) std::memcpy(q.data_as<float>() + bq * 32, h.q.data_as<float>() + (bq * 3 + i) * 32, 32 * sizeof(float));
    ASSERT_TRUE(steps->append(k, v).ok());
    Tensor out = testing::host_tensor(DType::kF32, {3, 4, 1, 32}), lse = testing::host_tensor(DType::kF32, {3, 4, 1});
    ASSERT_TRUE(steps->attend(q, {.out = out, .lse = lse}).ok());
    for (int64_t bq = 0; bq < 12; ++bq) {
      EXPECT_EQ(std::memcmp(out.data_as<float>() + bq * 32, out3.data_as<float>() + (bq * 3 + i) * 32, 32 * sizeof(float)), 0)
          << "step " << i << " row " << bq;
      EXPECT_EQ(lse.data_as<float>()[bq], lse3.data_as<float>()[bq * 3 + i]);
    }
  }
}

TEST(AttentionCache, FullBufferIsAnErrorThatNamesTheSequenceAndWritesNothing) {
  const SharedContextCacheConfig cfg = small_config(DType::kF32);
  auto cache = SharedContextCache::create(cfg);
  ASSERT_TRUE(cache.ok());
  Tensor k = testing::host_tensor(DType::kF32, {3, 2, 6, 32}), v = testing::host_tensor(DType::kF32, {3, 2, 6, 32});
  std::mt19937 rng(18);
  testing::fill_uniform(k, rng), testing::fill_uniform(v, rng);
  ASSERT_TRUE(cache->append(k, v, std::vector<int32_t>{2, 6, 5}).ok());
  const AttentionInputs in = cache->inputs(TensorView());
  const std::vector<uint8_t> before_k(in.buffer_k.data_as<uint8_t>(), in.buffer_k.data_as<uint8_t>() + in.buffer_k.storage_bytes());

  Tensor k1 = testing::host_tensor(DType::kF32, {3, 2, 1, 32}), v1 = testing::host_tensor(DType::kF32, {3, 2, 1, 32});
  testing::fill_uniform(k1, rng), testing::fill_uniform(v1, rng);
  const Status s = cache->append(k1, v1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("append: sequence 1 holds 6 of its buffer_capacity=6 entries; appending 1 would exceed it"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(std::vector<int32_t>(cache->buffer_lengths().begin(), cache->buffer_lengths().end()), (std::vector<int32_t>{2, 6, 5}));
  EXPECT_EQ(std::memcmp(before_k.data(), in.buffer_k.data(), before_k.size()), 0);
  EXPECT_EQ(std::vector<int32_t>(in.buffer_lengths.data_as<int32_t>(), in.buffer_lengths.data_as<int32_t>() + 3),
            (std::vector<int32_t>{2, 6, 5}));
  // Appending only where there is room works.
  EXPECT_TRUE(cache->append(k1, v1, std::vector<int32_t>{1, 0, 1}).ok());
  EXPECT_EQ(std::vector<int32_t>(cache->buffer_lengths().begin(), cache->buffer_lengths().end()), (std::vector<int32_t>{3, 6, 6}));
}

TEST(AttentionCache, BadCallsGiveClearErrors) {
  auto cache = SharedContextCache::create(small_config(DType::kF32));
  ASSERT_TRUE(cache.ok());
  Tensor long_ctx = testing::host_tensor(DType::kF32, {2, 121, 32});
  Tensor ctx_bf16 = testing::host_tensor(DType::kBF16, {2, 10, 32});
  Tensor ctx = testing::host_tensor(DType::kF32, {2, 10, 32});
  Tensor new_3d = testing::host_tensor(DType::kF32, {3, 2, 32});
  Tensor new_ok = testing::host_tensor(DType::kF32, {3, 2, 2, 32});
  struct Bad {
    Status status;
    const char* expect;
  };
  const Bad cases[] = {
      {cache->prefill(long_ctx, long_ctx), "prefill: context length Nctx=121 exceeds max_context=120"},
      {cache->prefill(ctx_bf16, ctx_bf16), "prefill: k: dtype bf16 does not match the cache's dtype=f32"},
      {cache->prefill(ctx, new_3d), "prefill: v: shape [3, 2, 32] does not match [Hkv, Nctx, D] (k's shape) = [2, 10, 32]"},
      {cache->append(new_3d, new_3d), "append: k: expected 4 dims [B, Hkv, L, D], got 3 ([3, 2, 32])"},
      {cache->append(new_ok, new_ok, std::vector<int32_t>{1, 2}), "append: counts has 2 entries, expected batch=3"},
      {cache->append(new_ok, new_ok, std::vector<int32_t>{1, 3, 0}), "append: counts[1]=3 is outside [0, L=2]"},
      {SharedContextCache::create({.batch = 0, .num_kv_heads = 1, .head_dim = 16}).status(), "config: batch=0 must be >= 1"},
      {SharedContextCache::create({.batch = 1, .num_kv_heads = 1, .head_dim = 40}).status(),
       "config: head_dim=40 is not supported (16, 32, 64 or 128)"},
      {SharedContextCache::create({.batch = 1, .num_kv_heads = 1, .head_dim = 16, .max_context = -1}).status(),
       "config: max_context=-1 must be >= 0"},
  };
  for (const Bad& b : cases) {
    ASSERT_FALSE(b.status.ok()) << b.expect;
    EXPECT_NE(b.status.message().find(b.expect), std::string::npos) << b.status.message();
  }
  EXPECT_EQ(cache->context_len(), 0);
}

TEST(AttentionCache, ResetEmptiesTheBuffersAndKeepsTheContext) {
  auto cache = SharedContextCache::create(small_config(DType::kF32));
  ASSERT_TRUE(cache.ok());
  Tensor ctx = testing::host_tensor(DType::kF32, {2, 7, 32}), kv = testing::host_tensor(DType::kF32, {3, 2, 2, 32});
  std::mt19937 rng(19);
  testing::fill_uniform(ctx, rng), testing::fill_uniform(kv, rng);
  ASSERT_TRUE(cache->prefill(ctx, ctx).ok());
  ASSERT_TRUE(cache->append(kv, kv).ok());
  ASSERT_TRUE(cache->reset().ok());
  EXPECT_EQ(cache->context_len(), 7);
  for (int32_t len : cache->buffer_lengths()) EXPECT_EQ(len, 0);
  EXPECT_EQ(cache->inputs(TensorView()).buffer_lengths.data_as<int32_t>()[2], 0);
}

TEST(AttentionCache, MemoryAccounting) {
  // The realistic case of docs/attention.md: Hkv = 4, D = 32, Nctx = 16384, B = 1024, Nbuf = 32, bf16.
  const SharedContextCacheConfig big{.batch = 1024, .num_kv_heads = 4, .head_dim = 32, .max_context = 16384,
                                     .buffer_capacity = 32, .dtype = DType::kBF16};
  const int64_t context = 2LL * 4 * 16384 * 32 * 2, buffers = 2LL * 1024 * 4 * 32 * 32 * 2, lengths = 1024 * 4;
  EXPECT_EQ(SharedContextCache::memory_bytes(big).value(), context + buffers + lengths);  // 25,169,920: 24.0 MiB
  EXPECT_EQ(SharedContextCache::replicated_memory_bytes(big).value(), 2LL * 1024 * 4 * (16384 + 32) * 32 * 2 + lengths);  // 8.02 GiB
  EXPECT_EQ(SharedContextCache::memory_bytes(big).value(), 25169920);
  EXPECT_EQ(SharedContextCache::replicated_memory_bytes(big).value(), 8606715904);

  // A created cache allocates what memory_bytes() says.
  auto cache = SharedContextCache::create(small_config());
  ASSERT_TRUE(cache.ok());
  const AttentionInputs in = cache->inputs(TensorView());
  EXPECT_EQ(cache->memory_bytes(), 2 * 2 * 120 * 32 * 2 + in.buffer_k.storage_bytes() + in.buffer_v.storage_bytes() +
                                       in.buffer_lengths.storage_bytes());
  EXPECT_EQ(cache->replicated_memory_bytes(), 2 * 3 * 2 * (120 + 6) * 32 * 2 + 3 * 4);
  EXPECT_FALSE(SharedContextCache::memory_bytes({.batch = 1, .num_kv_heads = 0, .head_dim = 16}).ok());
}

}  // namespace
}  // namespace moekit
