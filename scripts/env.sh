# Sourced by the scripts: puts a CUDA toolkit in the standard place on PATH when nvcc is not there.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
MOEKIT_PRESET="${MOEKIT_PRESET:-release}"
