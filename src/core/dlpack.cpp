#include "moekit/dlpack.h"

#include <array>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace moekit {
namespace {

struct DLPackMapping {
  DType type;
  uint8_t code;
  uint8_t bits;
};

constexpr std::array<DLPackMapping, 13> kMappings{{
    {DType::kF64, kDLFloat, 64},
    {DType::kF32, kDLFloat, 32},
    {DType::kF16, kDLFloat, 16},
    {DType::kBF16, kDLBfloat, 16},
    {DType::kE4M3, kDLPackFloat8E4M3FN, 8},
    {DType::kE5M2, kDLPackFloat8E5M2, 8},
    {DType::kE8M0, kDLPackFloat8E8M0FNU, 8},
    {DType::kE2M1, kDLPackFloat4E2M1FN, 4},
    {DType::kI64, kDLInt, 64},
    {DType::kI32, kDLInt, 32},
    {DType::kI8, kDLInt, 8},
    {DType::kI4, kDLInt, 4},
    {DType::kU8, kDLUInt, 8},
}};

// Keeps the shape/stride arrays (and, for owning exports, the tensor) alive inside a capsule.
struct ExportContext {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::shared_ptr<void> keep_alive;
};

Result<DLManagedTensor*> export_view(const TensorView& view, std::shared_ptr<void> keep_alive) {
  auto dt = dtype_to_dlpack(view.dtype());
  if (!dt.ok()) return dt.status();
  auto ctx = std::make_unique<ExportContext>();
  ctx->shape.assign(view.shape().begin(), view.shape().end());
  ctx->strides.assign(view.strides().begin(), view.strides().end());
  ctx->keep_alive = std::move(keep_alive);
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = view.data();
  t.device = DLDevice{view.device().is_cuda() ? kDLCUDA : kDLCPU, view.device().index};
  t.ndim = view.ndim();
  t.dtype = *dt;
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = [](DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
  return &ctx.release()->managed;
}

}  // namespace

Result<DType> dtype_from_dlpack(DLDataType t) {
  if (t.lanes != 1)
    return Status::Unsupported(fmt::format("DLPack dtype lanes={} (only scalar lanes=1 tensors are supported)", t.lanes));
  for (const auto& m : kMappings)
    if (m.code == t.code && m.bits == t.bits) return m.type;
  return Status::Unsupported(fmt::format("DLPack dtype code={} bits={} has no moekit equivalent", t.code, t.bits));
}

Result<DLDataType> dtype_to_dlpack(DType t) {
  if (t == DType::kUE4M3) return DLDataType{kDLPackFloat8E4M3FN, 8, 1};
  for (const auto& m : kMappings)
    if (m.type == t) return DLDataType{m.code, m.bits, 1};
  return Status::Internal(fmt::format("dtype {} has no DLPack mapping", dtype_name(t)));
}

Result<TensorView> view_from_dlpack(const DLTensor& t) {
  auto dtype = dtype_from_dlpack(t.dtype);
  if (!dtype.ok()) return dtype.status();
  Device device;
  switch (static_cast<int>(t.device.device_type)) {
    case kDLCPU:
    case kDLCUDAHost: device = Device::cpu(); break;
    case kDLCUDA:
    case kDLCUDAManaged: device = Device::cuda(t.device.device_id); break;
    default:
      return Status::Unsupported(fmt::format("DLPack device_type={} is not CPU or CUDA", static_cast<int>(t.device.device_type)));
  }
  if (t.ndim < 0 || t.ndim > kMaxTensorDims)
    return Status::InvalidArgument(fmt::format("DLPack ndim={} is outside [0, {}]", t.ndim, kMaxTensorDims));
  if (t.ndim > 0 && t.shape == nullptr) return Status::InvalidArgument("DLPack shape is null with ndim > 0");
  const std::span<const int64_t> shape(t.shape, static_cast<size_t>(t.ndim));
  const std::span<const int64_t> strides = t.strides ? std::span<const int64_t>(t.strides, static_cast<size_t>(t.ndim))
                                                     : std::span<const int64_t>();
  void* data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
  return TensorView::create(data, *dtype, shape, strides, device);
}

Result<Tensor> tensor_from_dlpack(DLManagedTensor* managed) {
  if (managed == nullptr) return Status::InvalidArgument("tensor_from_dlpack: managed tensor is null");
  auto view = view_from_dlpack(managed->dl_tensor);
  if (!view.ok()) return view.status();
  std::shared_ptr<void> release(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  return Tensor::adopt(*view, std::move(release));
}

Result<DLManagedTensor*> to_dlpack(Tensor&& tensor) {
  // Move the tensor into shared ownership held by the capsule.
  auto owned = std::make_shared<Tensor>(std::move(tensor));
  const TensorView view = owned->view();
  return export_view(view, std::move(owned));
}

Result<DLManagedTensor*> to_dlpack(const TensorView& view) { return export_view(view, nullptr); }

}  // namespace moekit
