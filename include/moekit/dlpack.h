// DLPack interchange: frameworks (PyTorch, JAX, CuPy, ...) hand tensors to moekit without copies,
// and moekit hands its tensors back the same way.
//
// Type codes follow DLPack 1.1 (fp8 e4m3fn = 10, e5m2 = 12, e8m0fnu = 14, fp4 e2m1fn = 17, with
// bits = 8/8/8/4); they are accepted whatever the version of the installed dlpack.h. ue4m3 tensors
// (NVFP4 block scales) are exported as float8_e4m3fn, which is how frameworks store them. Packed
// 4-bit tensors use bits = 4 and logical shapes; kDLCUDAHost (pinned) memory imports as a CPU view.
#pragma once

#include <dlpack/dlpack.h>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

// DLPack type codes newer than some installed dlpack.h headers.
inline constexpr uint8_t kDLPackFloat8E4M3FN = 10;
inline constexpr uint8_t kDLPackFloat8E5M2 = 12;
inline constexpr uint8_t kDLPackFloat8E8M0FNU = 14;
inline constexpr uint8_t kDLPackFloat4E2M1FN = 17;

Result<DType> dtype_from_dlpack(DLDataType t);
Result<DLDataType> dtype_to_dlpack(DType t);

// A non-owning view of a DLTensor; the producer keeps the memory alive.
Result<TensorView> view_from_dlpack(const DLTensor& t);

// Takes ownership of a managed tensor: the returned Tensor calls its deleter when destroyed. On
// error the capsule is left untouched (the caller still owns it).
Result<Tensor> tensor_from_dlpack(DLManagedTensor* managed);

// Exports a tensor, moving its ownership into the capsule (the consumer calls the deleter).
Result<DLManagedTensor*> to_dlpack(Tensor&& tensor);
// Exports a view without ownership: the deleter frees only the capsule, and the caller must keep
// the memory alive for as long as the consumer uses it.
Result<DLManagedTensor*> to_dlpack(const TensorView& view);

}  // namespace moekit
