// Times the CPU reference backend on one MoE layer with random data and prints GFLOP/s
// (flops = 2 * T * K * 3 * H * I, the layer's useful work with a gated activation).
//   moekit_cpu_bench [T] [E] [K] [H] [I] [repeats] [scheme]
// Default: Qwen3-30B-A3B, T=32, bf16 weights (scheme "none"). `scheme` is a quant_scheme_name()
// (fp8_block, w4a16, mxfp4, ...): weights then hold random codes with the scheme's scales
// (group schemes use group_size 128), activations stay bf16.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include <omp.h>

#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

using namespace moekit;

namespace {

// A host buffer of `numel` elements of `t` and a view of it with `shape`.
struct Buffer {
  std::vector<uint8_t> bytes;
  TensorView view;
  Buffer(DType t, std::vector<int64_t> shape) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    bytes.resize(static_cast<size_t>(dtype_storage_bytes(t, numel)) + 1);
    view = TensorView(bytes.data(), t, std::span<const int64_t>(shape.data(), shape.size()));
  }
};

// Weights, scales and static input scales of one GEMM ([E, N, K]) for `q`; codes are random bytes
// (NaN codes of e4m3 replaced by zero), scales small constants so outputs stay finite.
struct GemmWeights {
  std::vector<Buffer> owned;
  void make(QuantScheme q, int64_t E, int64_t N, int64_t K, std::minstd_rand& rng, TensorView& w, TensorView& scale,
            TensorView& global_scale, TensorView& input_scale) {
    using enum QuantScheme;
    const DType wt = q == kFp8PerTensor || q == kFp8PerToken || q == kFp8Block ? DType::kE4M3
                     : q == kInt8PerToken || q == kW8A16                       ? DType::kI8
                     : q == kW4A16 || q == kW4A8                               ? DType::kI4
                                                                               : DType::kE2M1;
    owned.reserve(8);
    Buffer& wb = owned.emplace_back(wt, std::vector<int64_t>{E, N, K});
    for (auto& b : wb.bytes) b = static_cast<uint8_t>(rng());
    if (wt == DType::kE4M3)
      for (auto& b : wb.bytes)
        if ((b & 0x7F) == 0x7F) b = 0;
    w = wb.view;
    auto constant = [&](DType t, std::vector<int64_t> shape, double v) -> TensorView {
      Buffer& b = owned.emplace_back(t, std::move(shape));
      for (int64_t i = 0; i < b.view.numel(); ++i) store_element(b.bytes.data(), t, i, v);
      return b.view;
    };
    switch (q) {
      case kFp8PerTensor: scale = constant(DType::kF32, {E}, 1e-3); break;
      case kFp8PerToken:
      case kInt8PerToken: scale = constant(DType::kF32, {E, N}, 1e-3); break;
      case kFp8Block: scale = constant(DType::kF32, {E, (N + 127) / 128, (K + 127) / 128}, 1e-3); break;
      case kW4A16:
      case kW8A16: scale = constant(DType::kBF16, {E, N, K / 128}, 1e-3); break;
      case kW4A8:
        scale = constant(DType::kF32, {E, N, K / 128}, 1e-3);
        input_scale = constant(DType::kF32, {}, 1e-2);
        break;
      case kMxfp4:
      case kMxfp4Mxfp8: scale = constant(DType::kE8M0, {E, N, K / 32}, 1.0 / 256); break;
      case kNvfp4:
        scale = constant(DType::kUE4M3, {E, N, K / 16}, 0.5);
        global_scale = constant(DType::kF32, {E}, 1e-2);
        input_scale = constant(DType::kF32, {}, 1e-2);
        break;
      case kNone: break;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  auto arg = [&](int i, long def) { return argc > i ? std::atol(argv[i]) : def; };
  const int64_t T = arg(1, 32), E = arg(2, 128), K = arg(3, 8), H = arg(4, 2048), I = arg(5, 768);
  const int repeats = static_cast<int>(arg(6, 3));
  const std::string_view scheme_name = argc > 7 ? argv[7] : "none";
  QuantScheme q = QuantScheme::kNone;
  bool known = false;
  for (int s = 0; s <= static_cast<int>(QuantScheme::kW4A8); ++s)
    if (quant_scheme_name(static_cast<QuantScheme>(s)) == scheme_name) q = static_cast<QuantScheme>(s), known = true;
  if (!known) {
    std::fprintf(stderr, "unknown scheme %s\n", argv[7]);
    return 1;
  }
  // Uniform values in [-scale, scale) from a fast generator: hundreds of millions of weights are
  // drawn, and std::normal_distribution would dominate the run.
  std::minstd_rand rng(2026);
  auto uniform = [&](double scale) { return (static_cast<double>(rng() % 65536) / 32768.0 - 1.0) * scale; };
  auto random_bf16 = [&](int64_t n, double scale) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = encode_bf16(uniform(scale));
    return v;
  };
  std::vector<uint16_t> w13, w2;
  if (q == QuantScheme::kNone) w13 = random_bf16(E * 2 * I * H, 0.02), w2 = random_bf16(E * H * I, 0.02);
  auto x = random_bf16(T * H, 1.0);
  std::vector<float> logits(T * E);
  for (auto& l : logits) l = static_cast<float>(uniform(2.0));
  std::vector<uint16_t> out(T * H);

  MoeProblem p{.num_experts = static_cast<int>(E), .top_k = static_cast<int>(K), .hidden = static_cast<int>(H),
               .intermediate = static_cast<int>(I), .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true},
               .quant = q};
  MoeWeights w;
  GemmWeights g1, g2;
  if (q == QuantScheme::kNone) {
    w.w13 = TensorView(w13.data(), DType::kBF16, {E, 2 * I, H});
    w.w2 = TensorView(w2.data(), DType::kBF16, {E, H, I});
  } else {
    g1.make(q, E, 2 * I, H, rng, w.w13, w.w13_scale, w.w13_global_scale, w.w13_input_scale);
    g2.make(q, E, H, I, rng, w.w2, w.w2_scale, w.w2_global_scale, w.w2_input_scale);
  }
  MoeInputs in{.hidden = TensorView(x.data(), DType::kBF16, {T, H}), .router_logits = TensorView(logits.data(), DType::kF32, {T, E})};
  MoeOutputs o{.out = TensorView(out.data(), DType::kBF16, {T, H})};

  const double flops = 2.0 * T * K * 3.0 * H * I;
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = cpu::run_reference(p, w, in, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 1;
    }
    best = std::min(best, sec);
    std::printf("run %d: %.3f s, %.2f GFLOP/s\n", r, sec, flops / sec / 1e9);
  }
  double checksum = 0;
  for (int64_t i = 0; i < T * H; ++i) checksum += decode_bf16(out[i]);
  std::printf("T=%lld E=%lld K=%lld H=%lld I=%lld %s threads=%d: best %.3f s, %.2f GFLOP/s (%.2f GFLOP), checksum %.6f\n",
              (long long)T, (long long)E, (long long)K, (long long)H, (long long)I, quant_scheme_name(q).data(),
              omp_get_max_threads(), best, flops / best / 1e9, flops / 1e9, checksum);
  return 0;
}
