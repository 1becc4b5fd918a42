// Shared by the standalone probes in this folder (each one file, built alone with nvcc): CHECK
// returns 1 from the calling function, with the failing call and CUDA's message on stderr.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#define CHECK(x)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)
