// The CUDA backends of shared-context attention against the CPU reference, on random data at odd
// sizes, every dtype and head dim, GQA, Lq > 1 with the causal rule, empty context and buffers;
// outputs poisoned with NaN before every run. Plus: both context engines, many splits, the
// workspace reused and deterministic, CUDA-graph capture, the cache on the device, and errors.
//
// Tolerance (FlashAttention-3's rule): the oracle is the CPU reference (float64 accumulation) run
// on an f32 copy of the same values. A naive implementation in the same precision (scores rounded
// to the dtype, softmax in f32, probabilities rounded to the dtype, P V accumulated in f32 and
// rounded: what eager attention on such tensors does) is measured against the same oracle; the
// kernel may be at most twice as far off, plus one rounding of the largest output (so that a case
// where the naive computation happens to be exact does not demand exactness); in f32, where both
// are a few units of roundoff off and exp2f's own error counts, 64 units (4e-6 relative).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention_test_util.h"
#include "cuda/attention/attention_cuda.h"
#include "gpu_test_util.h"
#include "moekit/attention.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

using testing::AttnCase;
using testing::HostAttention;
using testing::make_host_attention;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor to_device(const Tensor& host) {
  Tensor d = Tensor::empty(host.dtype(), host.shape(), Device::cuda(0)).value();
  EXPECT_TRUE(copy_tensor(d, host).ok());
  return d;
}

std::vector<double> values(const TensorView& device_or_host) {
  Tensor host = Tensor::empty(device_or_host.dtype(), device_or_host.shape()).value();
  EXPECT_TRUE(copy_tensor(host, device_or_host).ok());
  std::vector<double> v(static_cast<size_t>(host.numel()));
  for (int64_t i = 0; i < host.numel(); ++i) v[i] = load_element(host.data(), host.dtype(), i);
  return v;
}

struct DeviceAttention {
  Tensor q, ctx_k, ctx_v, buf_k, buf_v, lens, out, lse;
  AttentionInputs inputs() const {
    return {.q = q, .context_k = ctx_k, .context_v = ctx_v, .buffer_k = buf_k, .buffer_v = buf_v, .buffer_lengths = lens};
  }
  AttentionOutputs outputs() const { return {.out = out, .lse = lse}; }
  // cudaMemset runs on the legacy stream and returns before it is done: wait, so that a kernel a test
  // then queues on a non-blocking stream (CapturedInACudaGraph) never races the poison.
  void poison() const {
    EXPECT_EQ(cudaMemset(out.data(), 0xFF, static_cast<size_t>(out.storage_bytes())), cudaSuccess);
    EXPECT_EQ(cudaMemset(lse.data(), 0xFF, static_cast<size_t>(lse.storage_bytes())), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
};

DeviceAttention to_device(const HostAttention& h) {
  return {to_device(h.q),    to_device(h.ctx_k), to_device(h.ctx_v), to_device(h.buf_k),
          to_device(h.buf_v), to_device(h.lens), to_device(h.out),   to_device(h.lse)};
}

// ---- the oracle and the naive low-precision computation ---------------------------------------------
struct Outputs {
  std::vector<double> out, lse;
};

// The CPU reference on an f32 copy (bf16 and f16 values are exact in f32).
Outputs oracle(const HostAttention& h) {
  AttnCase c = h.c;
  c.dtype = DType::kF32;
  HostAttention f = make_host_attention(c, 0);
  for (auto [dst, src] : {std::pair{&f.q, &h.q}, {&f.ctx_k, &h.ctx_k}, {&f.ctx_v, &h.ctx_v}, {&f.buf_k, &h.buf_k}, {&f.buf_v, &h.buf_v}})
    for (int64_t i = 0; i < src->numel(); ++i) dst->data_as<float>()[i] = static_cast<float>(load_element(src->data(), h.c.dtype, i));
  std::memcpy(f.lens.data(), h.lens.data(), static_cast<size_t>(h.lens.storage_bytes()));
  auto info = shared_context_attention(c.params(), f.inputs(), f.outputs(), AttentionBackend::kCpuReference, nullptr, 0);
  EXPECT_TRUE(info.ok()) << info.status().to_string();
  return {values(f.out), values(f.lse)};
}

double round_to(DType t, double x) {
  switch (t) {
    case DType::kBF16: return decode_bf16(encode_bf16(x));
    case DType::kF16: return decode_f16(encode_f16(x));
    default: return static_cast<float>(x);
  }
}

Outputs naive_low_precision(const HostAttention& h) {
  const AttnCase& c = h.c;
  const int G = c.q_heads / c.kv_heads, D = c.head_dim;
  const float scale = c.scale != 0.0f ? c.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const std::vector<double> q = values(h.q), ck = values(h.ctx_k), cv = values(h.ctx_v), bk = values(h.buf_k), bv = values(h.buf_v);
  Outputs r;
  for (int b = 0; b < c.batch; ++b) {
    const int64_t len = h.lens.data_as<int32_t>()[b];
    for (int qh = 0; qh < c.q_heads; ++qh) {
      const int kvh = qh / G;
      for (int i = 0; i < c.q_len; ++i) {
        const int64_t row = (int64_t{b} * c.q_heads + qh) * c.q_len + i;
        std::vector<const double*> ks, vs;
        for (int64_t j = 0; j < c.ctx; ++j) ks.push_back(&ck[(kvh * c.ctx + j) * D]), vs.push_back(&cv[(kvh * c.ctx + j) * D]);
        for (int64_t j = 0; j < len && j <= len - c.q_len + i; ++j) {
          const int64_t at = ((int64_t{b} * c.kv_heads + kvh) * c.cap + j) * D;
          ks.push_back(&bk[at]), vs.push_back(&bv[at]);
        }
        std::vector<float> s;
        float m = -INFINITY;
        for (const double* k : ks) {
          float acc = 0.0f;
          for (int d = 0; d < D; ++d) acc += static_cast<float>(q[row * D + d]) * static_cast<float>(k[d]);
          s.push_back(static_cast<float>(round_to(c.dtype, acc * scale)));
          m = std::max(m, s.back());
        }
        float z = 0.0f;
        for (float x : s) z += std::exp(x - m);
        for (int d = 0; d < D; ++d) {
          float o = 0.0f;
          for (size_t j = 0; j < ks.size(); ++j)
            o += static_cast<float>(round_to(c.dtype, std::exp(s[j] - m) / z)) * static_cast<float>(vs[j][d]);
          r.out.push_back(ks.empty() ? 0.0 : round_to(c.dtype, o));
        }
        r.lse.push_back(ks.empty() ? -kInf : m + std::log(z));
      }
    }
  }
  return r;
}

double unit_roundoff(DType t) { return t == DType::kBF16 ? 0x1p-8 : t == DType::kF16 ? 0x1p-11 : 0x1p-24; }

struct Errors {
  double out = 0, lse = 0;
  int64_t nan = 0, lse_mismatch_inf = 0;
};

Errors errors(const Outputs& got, const Outputs& ref) {
  Errors e;
  for (size_t i = 0; i < ref.out.size(); ++i) {
    if (std::isnan(got.out[i])) ++e.nan;
    else e.out = std::max(e.out, std::abs(got.out[i] - ref.out[i]));
  }
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isnan(got.lse[i])) ++e.nan;
    else if ((ref.lse[i] == -kInf) != (got.lse[i] == -kInf)) ++e.lse_mismatch_inf;
    else if (ref.lse[i] != -kInf) e.lse = std::max(e.lse, std::abs(got.lse[i] - ref.lse[i]) / std::max(1.0, std::abs(ref.lse[i])));
  }
  return e;
}

// Checks `got` against the oracle with the tolerance described at the top.
void expect_close(const Outputs& got, const Outputs& ref, const Outputs& naive, DType dtype, const char* what) {
  SCOPED_TRACE(what);
  const Errors g = errors(got, ref), n = errors(naive, ref);
  double max_ref = 0;
  for (double x : ref.out) max_ref = std::max(max_ref, std::abs(x));
  const double tol_out = 2 * n.out + (dtype == DType::kF32 ? 64 : 1) * unit_roundoff(dtype) * max_ref;
  const double tol_lse = 2 * n.lse + 1e-5;
  EXPECT_EQ(g.nan, 0) << "NaN or unwritten outputs";
  EXPECT_EQ(g.lse_mismatch_inf, 0) << "lse is -inf where the oracle's is not, or the other way round";
  EXPECT_LE(g.out, tol_out) << "max |out - oracle| " << g.out << ", naive " << n.out;
  EXPECT_LE(g.lse, tol_lse) << "max relative lse error " << g.lse << ", naive " << n.lse;
}

Outputs run_on_device(const HostAttention& h, AttentionBackend backend, cuda::ContextEngine engine = cuda::ContextEngine::kAuto) {
  const DeviceAttention d = to_device(h);
  d.poison();
  const AttentionParams p = h.c.params();
  size_t bytes = 0;
  if (backend == AttentionBackend::kCuda) {
    auto b = cuda::shared_attention_workspace_size(p, d.inputs(), {.engine = engine});
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    bytes = b.ok() ? *b : 0;
  } else {
    auto b = attention_workspace_size(p, d.inputs(), backend);
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    bytes = b.ok() ? *b : 0;
  }
  Tensor ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0)).value();
  EXPECT_EQ(cudaMemset(ws.data(), 0, bytes), cudaSuccess);
  if (backend == AttentionBackend::kCuda) {
    const Status s = cuda::shared_attention(p, d.inputs(), d.outputs(), ws.data(), bytes, nullptr, {.engine = engine});
    EXPECT_TRUE(s.ok()) << s.to_string();
  } else {
    auto info = shared_context_attention(p, d.inputs(), d.outputs(), backend, ws.data(), bytes);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
    if (info.ok()) EXPECT_EQ(info->backend, backend);
    EXPECT_TRUE(info.ok() && info->warning.empty());
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {values(d.out), values(d.lse)};
}

// Every backend and engine that can run this dtype, against the oracle.
void check_all_backends(const HostAttention& h) {
  const Outputs ref = oracle(h), naive = naive_low_precision(h);
  expect_close(run_on_device(h, AttentionBackend::kCuda), ref, naive, h.c.dtype, "cuda (auto engine)");
  if (h.c.dtype != DType::kF32)
    expect_close(run_on_device(h, AttentionBackend::kCuda, cuda::ContextEngine::kSimt), ref, naive, h.c.dtype, "cuda (simt engine)");
  expect_close(run_on_device(h, AttentionBackend::kReplicated), ref, naive, h.c.dtype, "replicated");
}

// ---- odd sizes x dtypes x head dims -----------------------------------------------------------------

class AttentionCudaSizes : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(AttentionCudaSizes, MatchReferenceAtOddSizes) {
  MOEKIT_REQUIRE_GPU();
  const auto [dtype, D] = GetParam();
  struct Heads {
    int q, kv;
  };
  uint32_t seed = 1000 + D;
  for (int B : {1, 3})
    for (int64_t ctx : {0, 1, 100})
      for (int64_t cap : {0, 1, 37})
        for (Heads heads : {Heads{2, 2}, Heads{4, 2}, Heads{3, 1}})
          for (int Lq : {1, 3}) {
            const AttnCase c{.batch = B, .q_heads = heads.q, .kv_heads = heads.kv, .q_len = Lq, .head_dim = D, .ctx = ctx, .cap = cap,
                             .dtype = dtype};
            SCOPED_TRACE(c.name());
            check_all_backends(make_host_attention(c, ++seed));
            if (HasFailure()) return;
          }
}

INSTANTIATE_TEST_SUITE_P(AllDTypesAndHeadDims, AttentionCudaSizes,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16, DType::kF16), ::testing::Values(16, 32, 64, 128)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_D" + std::to_string(std::get<1>(info.param));
                         });

// ---- larger shapes: many splits, row blocks, long buffers -------------------------------------------

TEST(AttentionCuda, ManySplitsRowBlocksAndLongBuffers) {
  MOEKIT_REQUIRE_GPU();
  const AttnCase cases[] = {
      // 37 * 4 * 1 = 148 rows per kv head: three row blocks; the context splits across many CTAs.
      {.batch = 37, .q_heads = 8, .kv_heads = 2, .q_len = 1, .head_dim = 64, .ctx = 5000, .cap = 300, .dtype = DType::kBF16},
      {.batch = 37, .q_heads = 8, .kv_heads = 2, .q_len = 1, .head_dim = 64, .ctx = 5000, .cap = 300, .dtype = DType::kF32},
      // Teacher forcing with Lq = 7 over a long buffer (the buffer split over several CTAs).
      {.batch = 5, .q_heads = 4, .kv_heads = 4, .q_len = 7, .head_dim = 128, .ctx = 1000, .cap = 700, .dtype = DType::kF16},
      // One sequence, one head, a long context: every split is one tile.
      {.batch = 1, .q_heads = 1, .kv_heads = 1, .q_len = 1, .head_dim = 32, .ctx = 20000, .cap = 32, .dtype = DType::kBF16},
      // Large scores (scale 1, values up to 3): the online max must rescale correctly.
      {.batch = 3, .q_heads = 4, .kv_heads = 1, .q_len = 2, .head_dim = 16, .ctx = 3000, .cap = 40, .dtype = DType::kF32, .scale = 1.0f},
  };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(c.name());
    check_all_backends(make_host_attention(c, 77, c.scale != 0 ? -3.0 : -1.0, c.scale != 0 ? 3.0 : 1.0));
  }
}

TEST(AttentionCuda, ReusedWorkspaceIsDeterministicAndCountersReset) {
  MOEKIT_REQUIRE_GPU();
  const AttnCase c{.batch = 9, .q_heads = 4, .kv_heads = 2, .q_len = 2, .head_dim = 32, .ctx = 3000, .cap = 37, .dtype = DType::kBF16};
  HostAttention h = make_host_attention(c, 5);
  DeviceAttention d = to_device(h);
  const AttentionParams p = c.params();
  const size_t bytes = attention_workspace_size(p, d.inputs(), AttentionBackend::kCuda).value();
  Tensor ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0)).value();
  ASSERT_EQ(cudaMemset(ws.data(), 0, bytes), cudaSuccess);
  std::vector<std::vector<double>> runs;
  for (int i = 0; i < 3; ++i) {
    d.poison();
    ASSERT_TRUE(shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kCuda, ws.data(), bytes).ok());
    runs.push_back(values(d.out));
  }
  EXPECT_EQ(runs[0], runs[1]);  // bitwise: no atomics in any sum
  EXPECT_EQ(runs[0], runs[2]);
  // New queries on the same workspace: the counters were left at zero.
  HostAttention h2 = make_host_attention(c, 6);
  ASSERT_TRUE(copy_tensor(d.q, h2.q).ok());
  std::memcpy(h2.ctx_k.data(), h.ctx_k.data(), static_cast<size_t>(h.ctx_k.storage_bytes()));
  std::memcpy(h2.ctx_v.data(), h.ctx_v.data(), static_cast<size_t>(h.ctx_v.storage_bytes()));
  std::memcpy(h2.buf_k.data(), h.buf_k.data(), static_cast<size_t>(h.buf_k.storage_bytes()));
  std::memcpy(h2.buf_v.data(), h.buf_v.data(), static_cast<size_t>(h.buf_v.storage_bytes()));
  d.poison();
  ASSERT_TRUE(shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kCuda, ws.data(), bytes).ok());
  expect_close({values(d.out), values(d.lse)}, oracle(h2), naive_low_precision(h2), c.dtype, "second problem");
  // Everything the counters need is back to zero.
  std::vector<int> counters(64);
  ASSERT_EQ(cudaMemcpy(counters.data(), ws.data(), sizeof(int) * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(counters[0], 0);
  EXPECT_EQ(counters[1], 0);
}

TEST(AttentionCuda, CapturedInACudaGraph) {
  MOEKIT_REQUIRE_GPU();
  const AttnCase c{.batch = 3, .q_heads = 2, .kv_heads = 1, .q_len = 1, .head_dim = 64, .ctx = 700, .cap = 37, .dtype = DType::kF16};
  HostAttention h = make_host_attention(c, 9);
  DeviceAttention d = to_device(h);
  const AttentionParams p = c.params();
  const size_t bytes = attention_workspace_size(p, d.inputs(), AttentionBackend::kCuda).value();
  Tensor ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0)).value();
  ASSERT_EQ(cudaMemset(ws.data(), 0, bytes), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  auto info = shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kCuda, ws.data(), bytes, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 1u);  // one kernel, nothing else
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  d.poison();
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_close({values(d.out), values(d.lse)}, oracle(h), naive_low_precision(h), c.dtype, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(AttentionCuda, PrebuiltReplicatedCacheEqualsTheReplicatedBackend) {
  MOEKIT_REQUIRE_GPU();
  const AttnCase c{.batch = 3, .q_heads = 4, .kv_heads = 2, .q_len = 3, .head_dim = 32, .ctx = 100, .cap = 37, .dtype = DType::kBF16};
  HostAttention h = make_host_attention(c, 10);
  DeviceAttention d = to_device(h);
  const AttentionParams p = c.params();
  const size_t bytes = cuda::replicated_workspace_size(p, d.inputs()).value();
  Tensor ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0)).value();
  ASSERT_EQ(cudaMemset(ws.data(), 0, bytes), cudaSuccess);
  ASSERT_TRUE(cuda::replicated_attention(p, d.inputs(), d.outputs(), ws.data(), bytes, nullptr).ok());
  const std::vector<double> whole = values(d.out);
  d.poison();
  ASSERT_TRUE(cuda::replicated_materialize(p, d.inputs(), ws.data(), bytes, nullptr).ok());
  ASSERT_TRUE(cuda::replicated_attend_materialized(p, d.inputs(), d.outputs(), ws.data(), bytes, nullptr).ok());
  EXPECT_EQ(values(d.out), whole);
}

// ---- the cache on the device ----------------------------------------------------------------------

TEST(AttentionCuda, DeviceCacheMatchesTheHostCache) {
  MOEKIT_REQUIRE_GPU();
  const SharedContextCacheConfig host_cfg{.batch = 3, .num_kv_heads = 2, .head_dim = 64, .max_context = 200, .buffer_capacity = 9,
                                          .dtype = DType::kBF16};
  SharedContextCacheConfig dev_cfg = host_cfg;
  dev_cfg.device = Device::cuda(0);
  auto host = SharedContextCache::create(host_cfg);
  auto dev = SharedContextCache::create(dev_cfg);
  ASSERT_TRUE(host.ok() && dev.ok()) << dev.status().to_string();
  std::mt19937 rng(11);
  Tensor ctx_k = testing::host_tensor(DType::kBF16, {2, 150, 64}), ctx_v = testing::host_tensor(DType::kBF16, {2, 150, 64});
  testing::fill_uniform(ctx_k, rng), testing::fill_uniform(ctx_v, rng);
  ASSERT_TRUE(host->prefill(ctx_k, ctx_v).ok());
  ASSERT_TRUE(dev->prefill(to_device(ctx_k), to_device(ctx_v)).ok());
  for (int step = 0; step < 4; ++step) {
    Tensor k = testing::host_tensor(DType::kBF16, {3, 2, 2, 64}), v = testing::host_tensor(DType::kBF16, {3, 2, 2, 64});
    testing::fill_uniform(k, rng), testing::fill_uniform(v, rng);
    const std::vector<int32_t> count_values = {2, static_cast<int32_t>(step % 2), 1};
    const std::span<const int32_t> counts(count_values.data(), count_values.size());
    ASSERT_TRUE(host->append(k, v, counts).ok());
    if (step == 1) {
      ASSERT_TRUE(dev->append(k, v, counts).ok());  // host tensors: staged on the device
    } else {
      const Tensor dk = to_device(k), dv = to_device(v);  // device tensors, counts uploaded
      ASSERT_TRUE(dev->append(dk, dv, counts).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // before dk, dv go
    }
  }
  // Device tensors without counts: the one-kernel path.
  Tensor k1 = testing::host_tensor(DType::kBF16, {3, 2, 1, 64}), v1 = testing::host_tensor(DType::kBF16, {3, 2, 1, 64});
  testing::fill_uniform(k1, rng), testing::fill_uniform(v1, rng);
  ASSERT_TRUE(host->append(k1, v1).ok());
  const Tensor dk1 = to_device(k1), dv1 = to_device(v1);
  ASSERT_TRUE(dev->append(dk1, dv1).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(std::vector<int32_t>(host->buffer_lengths().begin(), host->buffer_lengths().end()),
            std::vector<int32_t>(dev->buffer_lengths().begin(), dev->buffer_lengths().end()));
  const AttentionInputs hin = host->inputs(TensorView()), din = dev->inputs(TensorView());
  EXPECT_EQ(values(din.buffer_lengths), values(hin.buffer_lengths));
  // Compare the stored entries only (positions past a sequence's length were never written).
  const std::vector<double> hk = values(hin.buffer_k), dk = values(din.buffer_k);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < host->buffer_lengths()[b]; ++j)
        for (int64_t d = 0; d < 64; ++d) {
          const int64_t i = (((b * 2 + h) * 9) + j) * 64 + d;
          ASSERT_EQ(hk[i], dk[i]) << b << " " << h << " " << j << " " << d;
        }

  Tensor q = testing::host_tensor(DType::kBF16, {3, 4, 1, 64});
  testing::fill_uniform(q, rng);
  Tensor hout = testing::host_tensor(DType::kBF16, {3, 4, 1, 64}), hlse = testing::host_tensor(DType::kF32, {3, 4, 1});
  Tensor dout = Tensor::empty(DType::kBF16, {3, 4, 1, 64}, Device::cuda(0)).value();
  Tensor dlse = Tensor::empty(DType::kF32, {3, 4, 1}, Device::cuda(0)).value();
  ASSERT_TRUE(host->attend(q, {.out = hout, .lse = hlse}).ok());
  const Tensor dq = to_device(q);
  auto info = dev->attend(dq, {.out = dout, .lse = dlse});
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(info->backend, AttentionBackend::kCuda);
  const std::vector<double> a = values(hout), b = values(dout);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2 * 0x1p-8 * std::max(0.25, std::abs(a[i]))) << i;

  // A full buffer is refused before anything runs.
  const Tensor big = to_device(testing::host_tensor(DType::kBF16, {3, 2, 9, 64}));
  const Status s = dev->append(big, big);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("buffer_capacity=9"), std::string::npos) << s.message();
}

// ---- errors and backend selection on the device ---------------------------------------------------

TEST(AttentionCuda, BackendSelectionAndErrors) {
  MOEKIT_REQUIRE_GPU();
  const AttnCase c{.batch = 2, .q_heads = 2, .kv_heads = 1, .q_len = 1, .head_dim = 16, .ctx = 10, .cap = 3, .dtype = DType::kF32};
  HostAttention h = make_host_attention(c, 12);
  DeviceAttention d = to_device(h);
  const AttentionParams p = c.params();
  // Auto on device tensors runs the CUDA kernel.
  const size_t bytes = attention_workspace_size(p, d.inputs(), AttentionBackend::kAuto).value();
  Tensor ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(std::max<size_t>(bytes, 16))}, Device::cuda(0)).value();
  ASSERT_EQ(cudaMemset(ws.data(), 0, bytes), cudaSuccess);
  auto info = shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kAuto, ws.data(), bytes);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->backend, AttentionBackend::kCuda);
  // The CPU reference cannot read device memory.
  auto refused = shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kCpuReference, nullptr, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("backend cpu_reference needs host tensors; q is on cuda:0"), std::string::npos);
  // Too small a workspace.
  auto small = shared_context_attention(p, d.inputs(), d.outputs(), AttentionBackend::kCuda, ws.data(), 8);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("workspace: 8 bytes given, the CUDA attention kernel needs"), std::string::npos)
      << small.status().message();
  // A misaligned tensor.
  AttentionInputs in = d.inputs();
  Tensor wide = Tensor::empty(DType::kF32, {2 * 2 * 16 + 1}, Device::cuda(0)).value();
  in.q = TensorView(wide.data_as<float>() + 1, DType::kF32, {2, 2, 1, 16}, Device::cuda(0));
  auto misaligned = shared_context_attention(p, in, d.outputs(), AttentionBackend::kCuda, ws.data(), bytes);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_NE(misaligned.status().message().find("q: data pointer"), std::string::npos) << misaligned.status().message();
  EXPECT_NE(misaligned.status().message().find("is not 16-byte aligned"), std::string::npos);
  // The mma engine needs 16-bit data.
  const Status s = cuda::shared_attention(p, d.inputs(), d.outputs(), ws.data(), bytes, nullptr, {.engine = cuda::ContextEngine::kMma});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("engine mma needs f16 or bf16 tensors, dtype=f32"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace moekit
