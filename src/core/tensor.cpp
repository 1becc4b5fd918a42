#include "moekit/tensor.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "device_runtime.h"

namespace moekit {

std::string Device::to_string() const { return is_cpu() ? "cpu" : fmt::format("cuda:{}", index); }

TensorView::TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device)
    : TensorView(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()), device) {}

TensorView::TensorView(void* data, DType dtype, std::span<const int64_t> shape, Device device) {
  *this = create(data, dtype, shape, {}, device).value();
}

Status TensorView::validate(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides) {
  if (shape.size() > static_cast<size_t>(kMaxTensorDims))
    return Status::InvalidArgument(fmt::format("tensor ndim={} exceeds the maximum of {}", shape.size(), kMaxTensorDims));
  if (!strides.empty() && strides.size() != shape.size())
    return Status::InvalidArgument(fmt::format("tensor strides has {} entries but shape has {}", strides.size(), shape.size()));
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0) return Status::InvalidArgument(fmt::format("tensor shape[{}]={} is negative", d, shape[d]));
  if (dtype_is_packed(dtype) && !shape.empty()) {
    const size_t last = shape.size() - 1;
    if (shape[last] % 2 != 0)
      return Status::InvalidArgument(fmt::format("packed {} tensor: innermost extent shape[{}]={} must be even",
                                                 dtype_name(dtype), last, shape[last]));
    if (!strides.empty()) {
      if (strides[last] != 1 && shape[last] > 1)
        return Status::InvalidArgument(fmt::format("packed {} tensor: innermost stride={} must be 1", dtype_name(dtype), strides[last]));
      for (size_t d = 0; d < last; ++d)
        if (strides[d] % 2 != 0)
          return Status::InvalidArgument(fmt::format("packed {} tensor: stride[{}]={} must be even", dtype_name(dtype), d, strides[d]));
    }
  }
  return Status::Ok();
}

Result<TensorView> TensorView::create(void* data, DType dtype, std::span<const int64_t> shape,
                                      std::span<const int64_t> strides, Device device) {
  MOEKIT_RETURN_IF_ERROR(validate(dtype, shape, strides));
  TensorView v;
  v.data_ = data;
  v.dtype_ = dtype;
  v.device_ = device;
  v.ndim_ = static_cast<int>(shape.size());
  int64_t running = 1;
  for (int d = v.ndim_ - 1; d >= 0; --d) {
    v.shape_[d] = shape[d];
    v.strides_[d] = strides.empty() ? running : strides[d];
    running *= shape[d];
  }
  if (data == nullptr && v.numel() > 0)
    return Status::InvalidArgument(fmt::format("tensor {} has a null data pointer", v.describe()));
  return v;
}

int64_t TensorView::size(int d) const {
  if (d < 0) d += ndim_;
  return (d < 0 || d >= ndim_) ? -1 : shape_[d];
}

int64_t TensorView::stride(int d) const {
  if (d < 0) d += ndim_;
  return (d < 0 || d >= ndim_) ? 0 : strides_[d];
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim_; ++d) n *= shape_[d];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int d = ndim_ - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

std::string TensorView::describe() const {
  return fmt::format("{}[{}] {}", dtype_name(dtype_), fmt::join(shape(), ", "), device_.to_string());
}

Result<Tensor> Tensor::empty(DType dtype, std::span<const int64_t> shape, Device device) {
  // Validate the shape before allocating: a view over a placeholder pointer.
  static char placeholder;
  auto probe = TensorView::create(&placeholder, dtype, shape, {}, device);
  if (!probe.ok()) return probe.status();
  const int64_t bytes = probe->storage_bytes();
  void* ptr = nullptr;
  std::shared_ptr<void> owner;
  if (device.is_cpu()) {
    constexpr size_t kAlign = 256;
    const size_t rounded = (static_cast<size_t>(bytes) + kAlign - 1) / kAlign * kAlign;
    ptr = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (ptr == nullptr)
      return Status::OutOfMemory(fmt::format("host allocation of {} bytes for {} failed", bytes, probe->describe()));
    owner = std::shared_ptr<void>(ptr, [](void* p) { std::free(p); });
  } else {
    MOEKIT_RETURN_IF_ERROR(detail::device_malloc(&ptr, static_cast<size_t>(bytes), device.index)
                               .with_context(fmt::format("allocating {}", probe->describe())));
    const int index = device.index;
    owner = std::shared_ptr<void>(ptr, [index](void* p) { detail::device_free(p, index); });
  }
  Tensor t;
  t.view_ = TensorView::create(ptr, dtype, shape, {}, device).value();
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::adopt(const TensorView& view, std::shared_ptr<void> release) {
  Tensor t;
  t.view_ = view;
  t.owner_ = std::move(release);
  return t;
}

Status copy_tensor(const TensorView& dst, const TensorView& src) {
  if (dst.dtype() != src.dtype())
    return Status::InvalidArgument(fmt::format("copy_tensor: dst {} and src {} differ in dtype", dst.describe(), src.describe()));
  if (!std::equal(dst.shape().begin(), dst.shape().end(), src.shape().begin(), src.shape().end()))
    return Status::InvalidArgument(fmt::format("copy_tensor: dst {} and src {} differ in shape", dst.describe(), src.describe()));
  if (!dst.is_contiguous() || !src.is_contiguous())
    return Status::Unsupported(fmt::format("copy_tensor: dst {} and src {} must both be contiguous", dst.describe(), src.describe()));
  const size_t bytes = static_cast<size_t>(src.storage_bytes());
  if (bytes == 0) return Status::Ok();
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    std::memmove(dst.data(), src.data(), bytes);
    return Status::Ok();
  }
  return detail::memcpy_sync(dst.data(), dst.device(), src.data(), src.device(), bytes);
}

}  // namespace moekit

namespace moekit {

Status synchronize(Device device) { return device.is_cpu() ? Status::Ok() : detail::device_sync(device.index); }

}  // namespace moekit
