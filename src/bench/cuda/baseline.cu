// The cuBLAS baseline (baseline.h): gather, per-expert cublasGemmEx, activation, per-expert
// cublasGemmEx, weighted combine.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <string>

#include "bench/cuda/baseline.h"
#include "bench/cuda/cublas_check.h"
#include "bench/floor.h"
#include "cuda/cuda_check.h"
#include "cuda/random_fill.h"

namespace moekit::bench {
namespace {

// __nv_bfloat16 and __half convert to and from float themselves (round to nearest even).
template <typename T>
__device__ float to_f(T v) { return static_cast<float>(v); }
template <typename T>
__device__ T from_f(float v) { return T(v); }

// rows[r] = hidden[row_token[r]]: one block per row.
template <typename T>
__global__ void gather_rows(const T* __restrict__ hidden, const int32_t* __restrict__ row_token, T* __restrict__ rows, int64_t H) {
  const int64_t r = blockIdx.x;
  const T* src = hidden + row_token[r] * H;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) rows[r * H + i] = src[i];
}

__device__ float silu(float x) { return x / (1.0f + __expf(-x)); }
__device__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }
__device__ float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

struct ActArgs {
  int kind;  // Activation
  bool gated, interleaved;
  float alpha, limit;
};

__device__ float activate(const ActArgs& a, float gate, float up) {
  switch (static_cast<Activation>(a.kind)) {
    case Activation::kSwiGLU: return silu(gate) * up;
    case Activation::kGeGLU: return gelu(gate) * up;
    case Activation::kGeGLUTanh: return gelu_tanh(gate) * up;
    case Activation::kSwiGLUClamped: {
      const float g = fminf(gate, a.limit), u = fminf(fmaxf(up, -a.limit), a.limit);
      return (u + 1.0f) * g / (1.0f + __expf(-a.alpha * g));
    }
    case Activation::kReLU2: return gate > 0 ? gate * gate : 0.0f;
    case Activation::kSiLU: return silu(gate);
    case Activation::kGeLU: return gelu(gate);
    case Activation::kReLU: return fmaxf(gate, 0.0f);
    default: return gate;
  }
}

// out [R, I] from in [R, gemm1_rows]: one block per row.
template <typename T>
__global__ void activation_rows(const T* __restrict__ in, T* __restrict__ out, int64_t I, ActArgs a) {
  const int64_t r = blockIdx.x, n1 = a.gated ? 2 * I : I;
  for (int64_t i = threadIdx.x; i < I; i += blockDim.x) {
    const T* row = in + r * n1;
    const float gate = to_f(a.interleaved ? row[2 * i] : row[i]);
    const float up = a.gated ? to_f(a.interleaved ? row[2 * i + 1] : row[I + i]) : 0.0f;
    out[r * I + i] = from_f<T>(activate(a, gate, up));
  }
}

// out[t] = scale * sum_k w[t, k] * rows[slot_row[t, k]] (slot_row -1: not a local expert). One block per token.
template <typename T>
__global__ void combine_rows(const T* __restrict__ rows, const int32_t* __restrict__ slot_row, const float* __restrict__ slot_weight,
                             T* __restrict__ out, int64_t H, int K, float scale) {
  const int64_t t = blockIdx.x;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int32_t r = slot_row[t * K + k];
      if (r >= 0) acc += slot_weight[t * K + k] * to_f(rows[static_cast<int64_t>(r) * H + i]);
    }
    out[t * H + i] = from_f<T>(scale * acc);
  }
}

struct DeviceArray {
  void* p = nullptr;
  size_t bytes = 0;
  Status ensure(size_t want) {
    if (want <= bytes) return Status::Ok();
    if (p != nullptr) MOEKIT_CUDA_RETURN_IF_ERROR(cudaFree(p));
    p = nullptr;
    bytes = 0;
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, std::max<size_t>(want, 256)));
    bytes = std::max<size_t>(want, 256);
    return Status::Ok();
  }
  ~DeviceArray() {
    if (p != nullptr) (void)cudaFree(p);
  }
};

template <typename T>
class Baseline final : public CublasBaseline {
 public:
  Baseline(const MoeProblem& p, cudaDataType_t type, cublasHandle_t h, void* ws, size_t ws_bytes)
      : p_(p), type_(type), handle_(h), cublas_ws_(ws), cublas_ws_bytes_(ws_bytes) {}
  ~Baseline() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
    if (cublas_ws_ != nullptr) (void)cudaFree(cublas_ws_);
  }

  Status set_routing(const std::vector<int32_t>& ids, const std::vector<float>& weights, int64_t tokens) override {
    const int K = p_.top_k, E = p_.local_experts(), begin = p_.local_expert_begin;
    tokens_ = tokens;
    counts_ = rows_per_local_expert(p_, ids);
    std::vector<int64_t> next(static_cast<size_t>(E) + 1, 0);
    for (int e = 0; e < E; ++e) next[e + 1] = next[e] + counts_[e];
    rows_ = next[E];
    std::vector<int32_t> row_token(static_cast<size_t>(std::max<int64_t>(rows_, 1))), slot_row(ids.size(), -1);
    for (size_t s = 0; s < ids.size(); ++s) {
      const int32_t id = ids[s];
      if (id < begin || id >= begin + E) continue;
      const int64_t r = next[id - begin]++;
      row_token[r] = static_cast<int32_t>(s / K);
      slot_row[s] = static_cast<int32_t>(r);
    }
    const size_t H = p_.hidden, N1 = p_.gemm1_rows(), I = p_.intermediate, R = static_cast<size_t>(std::max<int64_t>(rows_, 1));
    MOEKIT_RETURN_IF_ERROR(row_token_.ensure(R * 4));
    MOEKIT_RETURN_IF_ERROR(slot_row_.ensure(ids.size() * 4));
    MOEKIT_RETURN_IF_ERROR(slot_weight_.ensure(ids.size() * 4));
    MOEKIT_RETURN_IF_ERROR(a_.ensure(R * H * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(g1_.ensure(R * N1 * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(g2in_.ensure(R * I * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(g2out_.ensure(R * H * sizeof(T)));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(row_token_.p, row_token.data(), R * 4, cudaMemcpyHostToDevice));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(slot_row_.p, slot_row.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(slot_weight_.p, weights.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    return Status::Ok();
  }

  Result<int64_t> set_batched(const std::vector<int32_t>& ids) override {
    const int64_t E = p_.local_experts();
    int64_t rows = 0;
    for (int64_t c : rows_per_local_expert(p_, ids)) rows += c;
    batched_m_ = rows > 0 ? (rows + E - 1) / E : 0;
    if (batched_m_ == 0 || batched_m_ == filled_m_) return batched_m_;
    const int64_t H = p_.hidden, N1 = p_.gemm1_rows(), I = p_.intermediate, EM = E * batched_m_;
    MOEKIT_RETURN_IF_ERROR(b_in1_.ensure(static_cast<size_t>(EM * H) * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(b_out1_.ensure(static_cast<size_t>(EM * N1) * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(b_in2_.ensure(static_cast<size_t>(EM * I) * sizeof(T)));
    MOEKIT_RETURN_IF_ERROR(b_out2_.ensure(static_cast<size_t>(EM * H) * sizeof(T)));
    // Random rows in [-0.5, 0.5): operands as busy as the layer's (zeros would draw less power and
    // flatter the reference under the power limit). Filled once per size, not once per set.
    filled_m_ = 0;
    MOEKIT_RETURN_IF_ERROR(cuda::fill_uniform_device(TensorView(b_in1_.p, p_.activation_dtype, {EM * H}, Device::cuda()), 0.5, 0x9e3779b9u, 0));
    MOEKIT_RETURN_IF_ERROR(cuda::fill_uniform_device(TensorView(b_in2_.p, p_.activation_dtype, {EM * I}, Device::cuda()), 0.5, 0x85ebca6bu, 0));
    filled_m_ = batched_m_;
    return batched_m_;
  }

  Status enqueue_batched(const MoeWeights& w, void* stream_ptr) override {
    if (batched_m_ == 0) return Status::Ok();
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasSetStream(handle_, static_cast<cudaStream_t>(stream_ptr)));
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(handle_, cublas_ws_, cublas_ws_bytes_));
    MOEKIT_RETURN_IF_ERROR(batched_gemm(w.w13.data(), p_.gemm1_rows(), p_.hidden, b_in1_.p, b_out1_.p));
    return batched_gemm(w.w2.data(), p_.hidden, p_.intermediate, b_in2_.p, b_out2_.p);
  }

  Status read_batched(int gemm, Tensor& in, Tensor& out) const override {
    if (gemm != 1 && gemm != 2)
      return Status::InvalidArgument("read_batched: gemm must be 1 or 2, got " + std::to_string(gemm));
    if (filled_m_ == 0 || filled_m_ != batched_m_)
      return Status::InvalidArgument("read_batched: set_batched has found no routed rows to the local experts");
    const int64_t E = p_.local_experts(), m = batched_m_;
    const int64_t k = gemm == 1 ? p_.hidden : p_.intermediate, n = gemm == 1 ? p_.gemm1_rows() : p_.hidden;
    auto host_in = Tensor::empty(p_.activation_dtype, {E, m, k});
    auto host_out = Tensor::empty(p_.activation_dtype, {E, m, n});
    if (!host_in.ok()) return host_in.status();
    if (!host_out.ok()) return host_out.status();
    // The batched GEMMs ran on the caller's stream, which may not order with copy_tensor's copies.
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    auto device_view = [&](void* p, const Tensor& like) { return TensorView(p, like.dtype(), like.shape(), Device::cuda()); };
    MOEKIT_RETURN_IF_ERROR(copy_tensor(*host_in, device_view(gemm == 1 ? b_in1_.p : b_in2_.p, *host_in)));
    MOEKIT_RETURN_IF_ERROR(copy_tensor(*host_out, device_view(gemm == 1 ? b_out1_.p : b_out2_.p, *host_out)));
    in = std::move(host_in).value();
    out = std::move(host_out).value();
    return Status::Ok();
  }

  size_t layer_buffer_bytes() const override {
    size_t bytes = 0;
    for (const DeviceArray* a : {&row_token_, &slot_row_, &slot_weight_, &a_, &g1_, &g2in_, &g2out_}) bytes += a->bytes;
    return bytes;
  }

  Status enqueue(const MoeWeights& w, const TensorView& hidden, const TensorView& out, void* stream_ptr) override {
    auto stream = static_cast<cudaStream_t>(stream_ptr);
    const int64_t H = p_.hidden, N1 = p_.gemm1_rows(), I = p_.intermediate;
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasSetStream(handle_, stream));
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(handle_, cublas_ws_, cublas_ws_bytes_));
    if (rows_ > 0) {
      gather_rows<T><<<static_cast<unsigned>(rows_), 256, 0, stream>>>(static_cast<const T*>(hidden.data()),
                                                                       static_cast<const int32_t*>(row_token_.p), static_cast<T*>(a_.p), H);
      MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      MOEKIT_RETURN_IF_ERROR(per_expert_gemm(w.w13.data(), N1, H, a_.p, g1_.p));
      const ActArgs act{static_cast<int>(p_.activation.kind), activation_is_gated(p_.activation.kind),
                        p_.gate_up_layout == GateUpLayout::kInterleaved, p_.activation.alpha, p_.activation.limit};
      activation_rows<T><<<static_cast<unsigned>(rows_), 256, 0, stream>>>(static_cast<const T*>(g1_.p), static_cast<T*>(g2in_.p), I, act);
      MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      MOEKIT_RETURN_IF_ERROR(per_expert_gemm(w.w2.data(), H, I, g2in_.p, g2out_.p));
    }
    if (tokens_ > 0) {
      combine_rows<T><<<static_cast<unsigned>(tokens_), 256, 0, stream>>>(
          static_cast<const T*>(g2out_.p), static_cast<const int32_t*>(slot_row_.p), static_cast<const float*>(slot_weight_.p),
          static_cast<T*>(out.data()), H, p_.top_k, p_.routing.routed_scaling_factor);
      MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    return Status::Ok();
  }

 private:
  // out[rows of e] = in[rows of e] x W[e]^T, W [E_local, n, k] row-major: one cublasGemmEx per expert
  // with rows (column-major view: C^T[n, r] = W[e] (as k x n, transposed) x in^T).
  Status per_expert_gemm(const void* weights, int64_t n, int64_t k, const void* in, void* out) {
    const float alpha = 1.0f, beta = 0.0f;
    int64_t row = 0;
    for (size_t e = 0; e < counts_.size(); ++e) {
      const int64_t m = counts_[e];
      if (m == 0) continue;
      const auto* wp = static_cast<const T*>(weights) + static_cast<int64_t>(e) * n * k;
      MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                                 static_cast<int>(k), &alpha, wp, type_, static_cast<int>(k),
                                                 static_cast<const T*>(in) + row * k, type_, static_cast<int>(k), &beta,
                                                 static_cast<T*>(out) + row * n, type_, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                                                 CUBLAS_GEMM_DEFAULT));
      row += m;
    }
    return Status::Ok();
  }

  // out[e] = in[e] x W[e]^T for every local expert, batched_m_ rows each: W [E_local, n, k], in
  // [E_local, m, k], out [E_local, m, n], all row-major (column-major view as per_expert_gemm's).
  Status batched_gemm(const void* weights, int64_t n, int64_t k, const void* in, void* out) {
    const float alpha = 1.0f, beta = 0.0f;
    const int64_t m = batched_m_;
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
        handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, weights, type_,
        static_cast<int>(k), n * k, in, type_, static_cast<int>(k), m * k, &beta, out, type_, static_cast<int>(n), m * n,
        p_.local_experts(), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::Ok();
  }

  MoeProblem p_;
  cudaDataType_t type_;
  cublasHandle_t handle_;
  void* cublas_ws_;
  size_t cublas_ws_bytes_;
  std::vector<int64_t> counts_;
  int64_t rows_ = 0, tokens_ = 0;
  DeviceArray row_token_, slot_row_, slot_weight_, a_, g1_, g2in_, g2out_;
  int64_t batched_m_ = 0;  // rows per expert of the batched reference
  int64_t filled_m_ = 0;   // the batched_m_ whose random rows the b_in buffers hold (0: none)
  DeviceArray b_in1_, b_out1_, b_in2_, b_out2_;
};

}  // namespace

Result<std::unique_ptr<CublasBaseline>> CublasBaseline::create(const MoeProblem& p) {
  if (p.quant != QuantScheme::kNone)
    return Status::Unsupported("the cuBLAS baseline runs unquantized weights only (quant=" + std::string(quant_scheme_name(p.quant)) + ")");
  if (p.no_combine || p.apply_router_weight_on_input)
    return Status::Unsupported("the cuBLAS baseline combines the standard way only (no no_combine, no weight on input)");
  cublasHandle_t h = nullptr;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasCreate(&h));
  // cuBLAS must not allocate while a graph is captured: give it its workspace now.
  void* ws = nullptr;
  const size_t ws_bytes = size_t{32} << 20;
  if (cudaError_t e = cudaMalloc(&ws, ws_bytes); e != cudaSuccess) {
    cublasDestroy(h);
    return ::moekit::detail::cuda_status(e, "cudaMalloc(cuBLAS workspace)", __FILE__, __LINE__);
  }
  switch (p.activation_dtype) {
    case DType::kBF16: return std::unique_ptr<CublasBaseline>(new Baseline<__nv_bfloat16>(p, CUDA_R_16BF, h, ws, ws_bytes));
    case DType::kF16: return std::unique_ptr<CublasBaseline>(new Baseline<__half>(p, CUDA_R_16F, h, ws, ws_bytes));
    default: return std::unique_ptr<CublasBaseline>(new Baseline<float>(p, CUDA_R_32F, h, ws, ws_bytes));
  }
}

}  // namespace moekit::bench
