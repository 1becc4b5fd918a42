// Times the CPU reference backend on one MoE layer with random bf16 data and prints GFLOP/s
// (flops = 2 * T * K * 3 * H * I, the layer's useful work with a gated activation).
//   moekit_cpu_bench [T] [E] [K] [H] [I] [repeats]     default: Qwen3-30B-A3B, T=32
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <omp.h>

#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

using namespace moekit;

int main(int argc, char** argv) {
  auto arg = [&](int i, long def) { return argc > i ? std::atol(argv[i]) : def; };
  const int64_t T = arg(1, 32), E = arg(2, 128), K = arg(3, 8), H = arg(4, 2048), I = arg(5, 768);
  const int repeats = static_cast<int>(arg(6, 3));
  // Uniform values in [-scale, scale) from a fast generator: hundreds of millions of weights are
  // drawn, and std::normal_distribution would dominate the run.
  std::minstd_rand rng(2026);
  auto uniform = [&](double scale) { return (static_cast<double>(rng() % 65536) / 32768.0 - 1.0) * scale; };
  auto random_bf16 = [&](int64_t n, double scale) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = encode_bf16(uniform(scale));
    return v;
  };
  auto w13 = random_bf16(E * 2 * I * H, 0.02), w2 = random_bf16(E * H * I, 0.02), x = random_bf16(T * H, 1.0);
  std::vector<float> logits(T * E);
  for (auto& l : logits) l = static_cast<float>(uniform(2.0));
  std::vector<uint16_t> out(T * H);

  MoeProblem p{.num_experts = static_cast<int>(E), .top_k = static_cast<int>(K), .hidden = static_cast<int>(H),
               .intermediate = static_cast<int>(I), .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
  MoeWeights w{.w13 = TensorView(w13.data(), DType::kBF16, {E, 2 * I, H}), .w2 = TensorView(w2.data(), DType::kBF16, {E, H, I})};
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
  std::printf("T=%lld E=%lld K=%lld H=%lld I=%lld threads=%d: best %.3f s, %.2f GFLOP/s (%.2f GFLOP), checksum %.6f\n",
              (long long)T, (long long)E, (long long)K, (long long)H, (long long)I, omp_get_max_threads(), best,
              flops / best / 1e9, flops / 1e9, checksum);
  return 0;
}
