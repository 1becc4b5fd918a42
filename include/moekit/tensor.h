// Tensor views (non-owning) and owning tensors for host and CUDA device memory.
// Shapes and strides count logical elements, also for packed 4-bit types; a packed tensor must have
// unit stride and an even extent in its innermost dimension, and even outer strides, so that every
// row starts on a byte boundary.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "moekit/dtype.h"
#include "moekit/status.h"

namespace moekit {

enum class DeviceType : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::kCPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  std::string to_string() const;  // "cpu", "cuda:0"
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr int kMaxTensorDims = 8;

class TensorView {
 public:
  TensorView() = default;
  // A contiguous (row-major) view. Throws moekit::Error on an invalid shape; use create() for a
  // Status instead.
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device = Device::cpu());
  TensorView(void* data, DType dtype, std::span<const int64_t> shape, Device device = Device::cpu());

  // Checked construction. Empty `strides` means contiguous.
  static Result<TensorView> create(void* data, DType dtype, std::span<const int64_t> shape,
                                   std::span<const int64_t> strides = {}, Device device = Device::cpu());

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int ndim() const { return ndim_; }
  std::span<const int64_t> shape() const { return {shape_.data(), static_cast<size_t>(ndim_)}; }
  std::span<const int64_t> strides() const { return {strides_.data(), static_cast<size_t>(ndim_)}; }
  // Extent of dimension d; negative d counts from the end. Out of range: -1.
  int64_t size(int d) const;
  int64_t stride(int d) const;
  int64_t numel() const;
  bool is_contiguous() const;
  // Bytes spanned by a contiguous view (packed types round up).
  int64_t storage_bytes() const { return dtype_storage_bytes(dtype_, numel()); }
  // False only for a default-constructed view (no data, no dimensions): how optional tensors
  // (biases, scales, optional outputs) say "not given". Zero-element and scalar views are defined.
  bool defined() const { return data_ != nullptr || numel() == 0; }

  // "bf16[3, 2880] cuda:0"; used in error messages.
  std::string describe() const;

 private:
  static Status validate(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides);
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Device device_{};
  int ndim_ = 0;
  std::array<int64_t, kMaxTensorDims> shape_{};
  std::array<int64_t, kMaxTensorDims> strides_{};
};

// An owning, contiguous tensor. Move-only. Memory comes from an aligned host allocation, cudaMalloc,
// or an imported DLPack capsule (whose deleter runs when the tensor is destroyed).
class Tensor {
 public:
  Tensor() = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Uninitialised storage for `shape` on `device`. Host memory is 256-byte aligned.
  static Result<Tensor> empty(DType dtype, std::span<const int64_t> shape, Device device = Device::cpu());
  static Result<Tensor> empty(DType dtype, std::initializer_list<int64_t> shape, Device device = Device::cpu()) {
    return empty(dtype, std::span<const int64_t>(shape.begin(), shape.size()), device);
  }
  // Takes ownership of memory described by `view`; `release` frees it.
  static Tensor adopt(const TensorView& view, std::shared_ptr<void> release);

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT(google-explicit-constructor)
  void* data() const { return view_.data(); }
  template <typename T>
  T* data_as() const { return view_.data_as<T>(); }
  DType dtype() const { return view_.dtype(); }
  Device device() const { return view_.device(); }
  std::span<const int64_t> shape() const { return view_.shape(); }
  int64_t numel() const { return view_.numel(); }
  int64_t storage_bytes() const { return view_.storage_bytes(); }

 private:
  TensorView view_;
  std::shared_ptr<void> owner_;
};

// Synchronous copy between two contiguous tensors of the same dtype and shape, on any devices.
Status copy_tensor(const TensorView& dst, const TensorView& src);

// Waits until all work queued on `device` has finished (nothing to wait for on the CPU).
Status synchronize(Device device);

}  // namespace moekit
