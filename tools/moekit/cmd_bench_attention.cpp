// `moekit bench attention`: shared-context decode attention against the replicated baseline and the
// physical floor (shared K/V read once + the buffers + q + out), at several context lengths.
//
// On a GPU: CUDA-event timing (median, min, max of --iters runs after warm-up, the L2 cache flushed
// before each run), the read bandwidth measured in the same run, and a check of every output against
// the CPU reference on the first sequences. Without a GPU: the CPU backends, timed with a steady clock.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "cuda/attention/attention_cuda.h"
#include "cuda/bench_timing.h"
#include "moekit/attention.h"
#include "moekit/float_formats.h"
#include "moekit/system_info.h"

namespace moekit::cli {
namespace {

struct Options {
  int batch = 1024, q_heads = 4, kv_heads = 4, head_dim = 32, q_len = 1;
  std::vector<int64_t> ctx = {512, 4096, 16384};
  int64_t buf = 32;
  std::string dtype = "bf16", backend = "all", engine = "auto";
  int iters = 0, warmup = 5;
  int check_sequences = 4;
  bool json = false, csv = false;
  uint32_t seed = 1;
};

struct Row {
  int64_t ctx = 0;
  std::string backend;
  std::vector<double> us;  // each timed run
  double floor_bytes = 0, flops = 0, memory_bytes = 0;
  double refcheck = -1;  // relative L2 error against the CPU reference; -1: this row is the reference
  std::string note;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

std::string repro(const Options& o) {
  std::vector<std::string> ctx;
  for (int64_t c : o.ctx) ctx.push_back(std::to_string(c));
  return fmt::format(
      "moekit bench attention --batch {} --q-heads {} --kv-heads {} --head-dim {} --ctx {} --buf {} --q-len {} --dtype {} "
      "--backend {} --engine {} --iters {} --warmup {} --check-sequences {} --seed {}",
      o.batch, o.q_heads, o.kv_heads, o.head_dim, fmt::join(ctx, ","), o.buf, o.q_len, o.dtype, o.backend, o.engine, o.iters,
      o.warmup, o.check_sequences, o.seed);
}

// Host data of one problem: what the cache is filled with, and what the reference check slices.
struct HostData {
  Tensor q, ctx_k, ctx_v, buf_k, buf_v, lens;
};

Result<HostData> make_data(const AttentionParams& p, int64_t ctx, int64_t buf, uint32_t seed) {
  std::mt19937 rng(seed);
  HostData h;
  const int64_t B = p.batch, Hkv = p.num_kv_heads, D = p.head_dim;
  for (auto [t, shape] : {std::pair{&h.q, std::vector<int64_t>{B, p.num_q_heads, p.q_len, D}},
                          {&h.ctx_k, {Hkv, ctx, D}},
                          {&h.ctx_v, {Hkv, ctx, D}},
                          {&h.buf_k, {B, Hkv, buf, D}},
                          {&h.buf_v, {B, Hkv, buf, D}}}) {
    auto r = Tensor::empty(p.dtype, shape);
    if (!r.ok()) return r.status();
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t i = 0; i < r->numel(); ++i) store_element(r->data(), p.dtype, i, u(rng));
    *t = std::move(*r);
  }
  auto lens = Tensor::empty(DType::kI32, {B});
  if (!lens.ok()) return lens.status();
  std::fill_n(lens->data_as<int32_t>(), B, static_cast<int32_t>(buf));
  h.lens = std::move(*lens);
  return h;
}

// A view of the first n sequences of a [B, ...] tensor.
TensorView first(const TensorView& t, int64_t n) {
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  shape[0] = n;
  return TensorView::create(t.data(), t.dtype(), shape, {}, t.device()).value();
}

// ||got - ref|| / ||ref|| over the first n sequences of `out` (host or device) against the CPU reference.
Result<double> refcheck(const AttentionParams& p, const HostData& h, const TensorView& out, int n) {
  AttentionParams ps = p;
  ps.batch = n;
  auto ref = Tensor::empty(p.dtype, {n, p.num_q_heads, p.q_len, p.head_dim});
  auto got = Tensor::empty(p.dtype, {n, p.num_q_heads, p.q_len, p.head_dim});
  if (!ref.ok() || !got.ok()) return Status::OutOfMemory("refcheck: host tensors");
  const AttentionInputs in{.q = first(h.q, n), .context_k = h.ctx_k, .context_v = h.ctx_v, .buffer_k = first(h.buf_k, n),
                           .buffer_v = first(h.buf_v, n), .buffer_lengths = first(h.lens, n)};
  auto info = shared_context_attention(ps, in, {.out = *ref, .lse = {}}, AttentionBackend::kCpuReference, nullptr, 0);
  if (!info.ok()) return info.status();
  MOEKIT_RETURN_IF_ERROR(copy_tensor(*got, first(out, n)));
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref->numel(); ++i) {
    const double r = load_element(ref->data(), p.dtype, i), g = load_element(got->data(), p.dtype, i);
    num += (g - r) * (g - r);
    den += r * r;
    if (std::isnan(g)) return std::nan("");
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double refcheck_limit(DType t) { return t == DType::kF32 ? 1e-5 : t == DType::kF16 ? 2e-3 : 1e-2; }

Status poison(const TensorView& t) {
  std::vector<uint8_t> nan(static_cast<size_t>(t.storage_bytes()), 0xFF);
  return copy_tensor(t, TensorView::create(nan.data(), t.dtype(), t.shape()).value());
}

// Bytes per second of a plain sequential read of host memory (the CPU path's floor).
double host_read_bandwidth() {
  const size_t n = size_t{256} << 20;
  std::vector<uint64_t> data(n / 8, 0x5A5A5A5A5A5A5A5Aull);
  std::vector<double> s;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t acc = 0;
    for (uint64_t x : data) acc ^= x;
    const auto t1 = std::chrono::steady_clock::now();
    volatile uint64_t sink = acc;  // keeps the loop
    (void)sink;
    s.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return static_cast<double>(n) / median(s);
}

// The operation's minimum traffic: the shared K/V once, the buffers as filled, q, out, lengths.
double floor_bytes(const AttentionParams& p, int64_t ctx, int64_t buf) {
  const int64_t B = p.batch, D = p.head_dim;
  return static_cast<double>(dtype_storage_bytes(p.dtype, 2 * int64_t{p.num_kv_heads} * ctx * D) +
                             dtype_storage_bytes(p.dtype, 2 * B * p.num_kv_heads * buf * D) +
                             2 * dtype_storage_bytes(p.dtype, B * p.num_q_heads * p.q_len * D) + 4 * B);
}

// Multiply-adds of q.k and p.v over the keys each query attends to, times 2.
double useful_flops(const AttentionParams& p, int64_t ctx, int64_t buf) {
  double keys = 0;
  for (int i = 0; i < p.q_len; ++i) keys += static_cast<double>(ctx + std::max<int64_t>(0, buf - p.q_len + i + 1));
  return 4.0 * p.batch * p.num_q_heads * keys * p.head_dim;
}

Row make_row(const AttentionParams& p, int64_t ctx, int64_t buf, std::string backend) {
  Row r;
  r.ctx = ctx;
  r.backend = std::move(backend);
  r.floor_bytes = floor_bytes(p, ctx, buf);
  r.flops = useful_flops(p, ctx, buf);
  return r;
}

std::vector<std::string> backends_to_run(const std::string& which, bool gpu) {
  if (which == "all") return gpu ? std::vector<std::string>{"cuda", "replicated", "replicated+copy"}
                                 : std::vector<std::string>{"cpu_reference", "replicated+copy"};
  return {which};
}

// ---- one context length on the GPU -------------------------------------------------------------------
Status bench_gpu(const Options& o, const AttentionParams& p, int64_t ctx, const CudaDeviceInfo& dev, std::vector<Row>& rows,
                 std::vector<std::string>& notes) {
  auto data = make_data(p, ctx, o.buf, o.seed);
  if (!data.ok()) return data.status();
  const Device gpu = Device::cuda(0);
  const SharedContextCacheConfig cfg{.batch = p.batch, .num_kv_heads = p.num_kv_heads, .head_dim = p.head_dim, .max_context = ctx,
                                     .buffer_capacity = o.buf, .dtype = p.dtype, .device = gpu};
  auto cache = SharedContextCache::create(cfg);
  if (!cache.ok()) return cache.status();
  MOEKIT_RETURN_IF_ERROR(cache->prefill(data->ctx_k, data->ctx_v));
  MOEKIT_RETURN_IF_ERROR(cache->append(data->buf_k, data->buf_v));
  auto q = Tensor::empty(p.dtype, data->q.shape(), gpu);
  auto out = Tensor::empty(p.dtype, data->q.shape(), gpu);
  if (!q.ok() || !out.ok()) return Status::OutOfMemory("q/out on the device");
  MOEKIT_RETURN_IF_ERROR(copy_tensor(*q, data->q));
  const AttentionInputs in = cache->inputs(*q);
  const AttentionOutputs outs{.out = *out, .lse = {}};
  const int check_n = std::min(o.batch, o.check_sequences);
  const int iters = o.iters > 0 ? o.iters : 50;
  const size_t flush = static_cast<size_t>(std::max<int64_t>(4 * dev.l2_cache_bytes, int64_t{256} << 20));
  const cuda::AttentionOptions opts{.engine = o.engine == "simt" ? cuda::ContextEngine::kSimt
                                              : o.engine == "mma" ? cuda::ContextEngine::kMma
                                                                  : cuda::ContextEngine::kAuto};

  for (const std::string& backend : backends_to_run(o.backend, true)) {
    Row row = make_row(p, ctx, o.buf, backend);
    std::function<Status(void*)> launch;
    Tensor ws;
    auto alloc_ws = [&](size_t bytes) -> Status {
      auto w = Tensor::empty(DType::kU8, {static_cast<int64_t>(std::max<size_t>(bytes, 256))}, gpu);
      if (!w.ok()) return w.status();
      ws = std::move(*w);
      MOEKIT_RETURN_IF_ERROR(cuda::zero_device_memory(ws.data(), bytes, nullptr));
      return cuda::synchronize_stream(nullptr);
    };
    if (backend == "cuda") {
      auto info = cuda::shared_attention_launch_info(p, in, opts);
      if (!info.ok()) return info.status();
      MOEKIT_RETURN_IF_ERROR(alloc_ws(info->workspace_bytes));
      row.memory_bytes = static_cast<double>(cache->memory_bytes());
      notes.push_back(fmt::format("ctx {}: cuda kernel engine {}, {} threads, {} CTAs/SM, {} row blocks x {} kv heads, {} context "
                                  "splits, {} buffer splits, {} CTAs ({:.1f} waves), workspace {}",
                                  ctx, cuda::context_engine_name(info->engine), info->threads, info->ctas_per_sm, info->row_blocks,
                                  p.num_kv_heads, info->context_splits, info->buffer_splits, info->grid_ctas,
                                  static_cast<double>(info->grid_ctas) / (info->sm_count * info->ctas_per_sm),
                                  bytes_text(static_cast<double>(info->workspace_bytes))));
      launch = [&, bytes = info->workspace_bytes](void* s) { return cuda::shared_attention(p, in, outs, ws.data(), bytes, s, opts); };
    } else if (backend == "replicated" || backend == "replicated+copy") {
      auto bytes = cuda::replicated_workspace_size(p, in);
      if (!bytes.ok()) return bytes.status();
      row.memory_bytes = static_cast<double>(cache->replicated_memory_bytes());
      if (Status s = alloc_ws(*bytes); !s.ok()) {
        row.note = "skipped: " + s.message();
        rows.push_back(row);
        continue;
      }
      if (backend == "replicated") {  // the per-sequence cache exists already: time the attention alone
        MOEKIT_RETURN_IF_ERROR(cuda::replicated_materialize(p, in, ws.data(), *bytes, nullptr));
        launch = [&, b = *bytes](void* s) { return cuda::replicated_attend_materialized(p, in, outs, ws.data(), b, s); };
      } else {
        launch = [&, b = *bytes](void* s) { return cuda::replicated_attention(p, in, outs, ws.data(), b, s); };
      }
    } else {
      return Status::InvalidArgument(fmt::format("--backend {} is not available on a GPU (cuda, replicated, replicated+copy, all)", backend));
    }
    MOEKIT_RETURN_IF_ERROR(poison(*out));
    MOEKIT_RETURN_IF_ERROR(launch(nullptr));
    MOEKIT_RETURN_IF_ERROR(cuda::synchronize_stream(nullptr));
    auto err = refcheck(p, *data, *out, check_n);
    if (!err.ok()) return err.status();
    row.refcheck = *err;
    auto us = cuda::time_launches(launch, o.warmup, iters, flush);
    if (!us.ok()) return us.status();
    row.us = *us;
    rows.push_back(row);
  }
  return Status::Ok();
}

// ---- one context length on the CPU --------------------------------------------------------------------
Status bench_cpu(const Options& o, const AttentionParams& p, int64_t ctx, std::vector<Row>& rows) {
  auto data = make_data(p, ctx, o.buf, o.seed);
  if (!data.ok()) return data.status();
  const SharedContextCacheConfig cfg{.batch = p.batch, .num_kv_heads = p.num_kv_heads, .head_dim = p.head_dim, .max_context = ctx,
                                     .buffer_capacity = o.buf, .dtype = p.dtype};
  auto cache = SharedContextCache::create(cfg);
  if (!cache.ok()) return cache.status();
  MOEKIT_RETURN_IF_ERROR(cache->prefill(data->ctx_k, data->ctx_v));
  MOEKIT_RETURN_IF_ERROR(cache->append(data->buf_k, data->buf_v));
  auto out = Tensor::empty(p.dtype, data->q.shape());
  if (!out.ok()) return out.status();
  const AttentionInputs in = cache->inputs(data->q);
  const int iters = o.iters > 0 ? o.iters : 3;
  for (const std::string& name : backends_to_run(o.backend, false)) {
    auto backend = name == "replicated+copy" || name == "replicated" ? std::optional(AttentionBackend::kReplicated)
                                                                       : parse_attention_backend(name);
    if (!backend)
      return Status::InvalidArgument(fmt::format("--backend {} is not a backend (all, cuda, replicated, replicated+copy, cpu)", name));
    // As the library does: the CUDA backend falls back to the reference without a GPU.
    const bool fallback = *backend == AttentionBackend::kCuda || *backend == AttentionBackend::kAuto;
    if (fallback) backend = AttentionBackend::kCpuReference;
    Row row = make_row(p, ctx, o.buf, fallback ? "cpu_reference" : name);
    if (fallback) row.note = fmt::format("(--backend {}: no GPU, ran the CPU reference)", name);
    row.memory_bytes = static_cast<double>(*backend == AttentionBackend::kReplicated ? cache->replicated_memory_bytes() : cache->memory_bytes());
    auto bytes = attention_workspace_size(p, in, *backend);
    if (!bytes.ok()) return bytes.status();
    std::vector<uint8_t> ws;
    if (*bytes > (size_t{4} << 30)) {
      row.note = fmt::format("skipped: needs a {} workspace", bytes_text(static_cast<double>(*bytes)));
      rows.push_back(row);
      continue;
    }
    ws.resize(*bytes);
    MOEKIT_RETURN_IF_ERROR(poison(*out));
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto info = shared_context_attention(p, in, {.out = *out, .lse = {}}, *backend, ws.data(), ws.size());
      const auto t1 = std::chrono::steady_clock::now();
      if (!info.ok()) return info.status();
      row.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (*backend != AttentionBackend::kCpuReference) {
      auto err = refcheck(p, *data, *out, std::min(o.batch, o.check_sequences));
      if (!err.ok()) return err.status();
      row.refcheck = *err;
    }
    rows.push_back(row);
  }
  return Status::Ok();
}

int run(const Options& o) {
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype) {
    fmt::print(stderr, "moekit bench attention: --dtype {} is not a dtype (f32, f16, bf16)\n", o.dtype);
    return 1;
  }
  const AttentionParams p{.batch = o.batch, .num_q_heads = o.q_heads, .num_kv_heads = o.kv_heads, .q_len = o.q_len,
                          .head_dim = o.head_dim, .softmax_scale = 0.0f, .dtype = *dtype};
  Status s = validate_attention_params(p);
  if (s.ok() && o.batch < 1) s = Status::InvalidArgument(fmt::format("--batch {} must be >= 1", o.batch));
  if (s.ok() && o.buf < 0) s = Status::InvalidArgument(fmt::format("--buf {} must be >= 0", o.buf));
  for (int64_t c : o.ctx)
    if (s.ok() && c < 0) s = Status::InvalidArgument(fmt::format("--ctx {} must be >= 0", c));
  if (!s.ok()) {
    fmt::print(stderr, "moekit bench attention: {}\n", s.to_string());
    return 1;
  }

  const SystemInfo sys = query_system();
  const bool gpu = !sys.devices.empty();
  std::vector<Row> rows;
  std::vector<std::string> notes;
  double bandwidth = 0;
  std::string device, bandwidth_how;
  if (gpu) {
    const CudaDeviceInfo& d = sys.devices.front();
    device = fmt::format("{} ({} SMs, {:.0f} MiB L2)", d.name, d.sm_count, d.l2_cache_bytes / 1048576.0);
    auto bw = cuda::measure_read_bandwidth(size_t{1} << 30, 10);
    if (!bw.ok()) {
      fmt::print(stderr, "moekit bench attention: {}\n", bw.status().to_string());
      return 1;
    }
    bandwidth = *bw;
    bandwidth_how = "streaming read of 1 GiB on the device, median of 10";
    for (int64_t ctx : o.ctx) s = s.ok() ? bench_gpu(o, p, ctx, d, rows, notes) : s;
  } else {
    device = fmt::format("no GPU: CPU backend ({}), {} threads", sys.no_gpu_reason, sys.cpu_threads);
    bandwidth = host_read_bandwidth();
    bandwidth_how = "sequential read of 256 MiB of host memory, median of 3";
    for (int64_t ctx : o.ctx) s = s.ok() ? bench_cpu(o, p, ctx, rows) : s;
  }
  if (!s.ok()) {
    fmt::print(stderr, "moekit bench attention: {}\n", s.to_string());
    return 1;
  }

  bool refcheck_ok = true;
  nlohmann::ordered_json jrows = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    const double med = median(r.us), floor_us = r.floor_bytes / bandwidth * 1e6;
    const bool ok = r.refcheck < 0 || r.refcheck <= refcheck_limit(p.dtype);
    refcheck_ok &= ok;
    nlohmann::ordered_json j{{"ctx", r.ctx}, {"backend", r.backend}, {"note", r.note}};
    if (!r.us.empty()) {
      j.update({{"median_us", med},
                {"min_us", *std::min_element(r.us.begin(), r.us.end())},
                {"max_us", *std::max_element(r.us.begin(), r.us.end())},
                {"runs", r.us.size()},
                {"floor_bytes", r.floor_bytes},
                {"floor_us", floor_us},
                {"effective_gbps", r.floor_bytes / med * 1e-3},
                {"percent_of_floor", 100.0 * floor_us / med},
                {"tflops", r.flops / med * 1e-6},
                {"kv_memory_bytes", r.memory_bytes},
                {"refcheck_rel_l2", r.refcheck}});
    }
    jrows.push_back(j);
  }
  const std::string command = repro(o);

  if (o.json) {
    nlohmann::ordered_json j{{"command", command},
                             {"device", device},
                             {"read_bandwidth_gbps", bandwidth * 1e-9},
                             {"read_bandwidth_method", bandwidth_how},
                             {"problem", {{"batch", o.batch}, {"q_heads", o.q_heads}, {"kv_heads", o.kv_heads}, {"q_len", o.q_len},
                                          {"head_dim", o.head_dim}, {"buf", o.buf}, {"dtype", o.dtype}}},
                             {"notes", notes},
                             {"rows", jrows}};
    fmt::print("{}\n", j.dump(2));
  } else if (o.csv) {
    fmt::print("ctx,backend,median_us,min_us,max_us,effective_gbps,percent_of_floor,tflops,kv_memory_bytes,refcheck_rel_l2,note\n");
    for (const auto& j : jrows) {
      if (!j.contains("median_us")) {
        fmt::print("{},{},,,,,,,,,{}\n", j["ctx"].get<int64_t>(), j["backend"].get<std::string>(), j["note"].get<std::string>());
        continue;
      }
      fmt::print("{},{},{:.3f},{:.3f},{:.3f},{:.1f},{:.1f},{:.3f},{:.0f},{:.3g},{}\n", j["ctx"].get<int64_t>(),
                 j["backend"].get<std::string>(), j["median_us"].get<double>(), j["min_us"].get<double>(), j["max_us"].get<double>(),
                 j["effective_gbps"].get<double>(), j["percent_of_floor"].get<double>(), j["tflops"].get<double>(),
                 j["kv_memory_bytes"].get<double>(), j["refcheck_rel_l2"].get<double>(), j["note"].get<std::string>());
    }
  } else {
    fmt::print("moekit bench attention: shared-context decode attention\n");
    fmt::print("  device    : {}\n", device);
    fmt::print("  bandwidth : {:.0f} GB/s read ({})\n", bandwidth * 1e-9, bandwidth_how);
    fmt::print("  problem   : B={} Hq={} Hkv={} Lq={} D={} Nbuf={} {}, scale 1/sqrt(D)\n", o.batch, o.q_heads, o.kv_heads, o.q_len,
               o.head_dim, o.buf, o.dtype);
    fmt::print("  timing    : {}\n",
               gpu ? fmt::format("median of {} CUDA-event-timed runs after {} warm-up runs, L2 flushed before each", o.iters > 0 ? o.iters : 50,
                                 o.warmup)
                   : fmt::format("median of {} runs (steady clock)", o.iters > 0 ? o.iters : 3));
    fmt::print("  floor     : bytes = shared K/V once + buffers + q + out; floor time = bytes / read bandwidth\n");
    fmt::print("  refcheck  : first {} sequences against the CPU reference, relative L2 error (limit {:g})\n",
               std::min(o.batch, o.check_sequences), refcheck_limit(p.dtype));
    fmt::print("  reproduce : {}\n\n", command);
    fmt::print("{:>7}  {:<16} {:>11} {:>10} {:>10} {:>9} {:>8} {:>8} {:>11} {:>10}  {}\n", "ctx", "backend", "median us", "min us",
               "max us", "eff GB/s", "% floor", "TFLOP/s", "kv memory", "refcheck", "");
    for (const auto& j : jrows) {
      if (!j.contains("median_us")) {
        fmt::print("{:>7}  {:<16} {}\n", j["ctx"].get<int64_t>(), j["backend"].get<std::string>(), j["note"].get<std::string>());
        continue;
      }
      const double rc = j["refcheck_rel_l2"].get<double>();
      fmt::print("{:>7}  {:<16} {:>11.2f} {:>10.2f} {:>10.2f} {:>9.0f} {:>7.1f}% {:>8.2f} {:>11} {:>10}  {}\n", j["ctx"].get<int64_t>(),
                 j["backend"].get<std::string>(), j["median_us"].get<double>(), j["min_us"].get<double>(), j["max_us"].get<double>(),
                 j["effective_gbps"].get<double>(), j["percent_of_floor"].get<double>(), j["tflops"].get<double>(),
                 bytes_text(j["kv_memory_bytes"].get<double>()), rc < 0 ? std::string("oracle") : fmt::format("{:.2e}", rc),
                 (rc < 0 || rc <= refcheck_limit(p.dtype) ? "" : "REFCHECK FAILED ") + j["note"].get<std::string>());
    }
    for (const std::string& n : notes) fmt::print("  {}\n", n);
    fmt::print("  kv memory: shared = context + buffers + lengths; replicated = [B, Hkv, Nctx + Nbuf, D] K and V + lengths\n");
  }
  if (!refcheck_ok) {
    fmt::print(stderr, "moekit bench attention: an output differs from the CPU reference beyond {:g}\n", refcheck_limit(p.dtype));
    return 3;
  }
  return 0;
}

}  // namespace

CommandAction add_bench_attention_command(CLI::App& app) {
  CLI::App* bench = app.get_subcommand("bench");
  auto* cmd = bench->add_subcommand("attention", "Shared-context decode attention against the replicated baseline and the floor");
  auto o = std::make_shared<Options>();
  cmd->add_option("--batch", o->batch, "Sequences B")->capture_default_str();
  cmd->add_option("--q-heads", o->q_heads, "Query heads Hq")->capture_default_str();
  cmd->add_option("--kv-heads", o->kv_heads, "Key/value heads Hkv")->capture_default_str();
  cmd->add_option("--head-dim", o->head_dim, "Head dim D (16, 32, 64, 128)")->capture_default_str();
  cmd->add_option("--ctx", o->ctx, "Shared context lengths, comma-separated")->delimiter(',')->capture_default_str();
  cmd->add_option("--buf", o->buf, "Buffer entries per sequence (all filled)")->capture_default_str();
  cmd->add_option("--q-len", o->q_len, "Queries per sequence Lq (causal inside the buffer)")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "f32, f16 or bf16")->capture_default_str();
  cmd->add_option("--backend", o->backend, "all, cuda, replicated, replicated+copy (GPU); all, cpu, replicated+copy (CPU)")
      ->capture_default_str();
  cmd->add_option("--engine", o->engine, "CUDA context engine: auto, simt, mma")
      ->check(CLI::IsMember({"auto", "simt", "mma"}))
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "Timed runs (0: 50 on a GPU, 3 on the CPU)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed runs first (GPU)")->capture_default_str();
  cmd->add_option("--check-sequences", o->check_sequences, "Sequences checked against the CPU reference")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random data seed")->capture_default_str();
  auto* json = cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--csv", o->csv, "Print CSV")->excludes(json);
  return [cmd, o]() {
    if (!cmd->parsed()) return -1;
    return run(*o);
  };
}

}  // namespace moekit::cli
