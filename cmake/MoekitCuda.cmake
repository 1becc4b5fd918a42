# Decides whether the CUDA backend is built and with which flags.
# Outputs: MOEKIT_WITH_CUDA (BOOL), MOEKIT_CUDA_ARCHS_EFFECTIVE (string, empty without CUDA),
#          MOEKIT_CUDA_GENCODE_FLAGS (list), MOEKIT_CUTLASS_INCLUDE (path).
include(CheckLanguage)

set(MOEKIT_WITH_CUDA OFF)
set(MOEKIT_CUDA_ARCHS_EFFECTIVE "")
if(NOT MOEKIT_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MOEKIT_WITH_CUDA ON)
  elseif(MOEKIT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MOEKIT_CUDA=ON but no CUDA compiler was found. Put nvcc on PATH or set "
                        "CMAKE_CUDA_COMPILER, or configure with -DMOEKIT_CUDA=OFF for the CPU backend.")
  else()
    message(STATUS "moekit: no CUDA compiler found; building the CPU backend only")
  endif()
endif()

if(MOEKIT_WITH_CUDA)
  # We pass our own -gencode flags (the explicit compute_90a/sm_90a form that wgmma needs), so CMake
  # must not add its own architecture flags.
  set(CMAKE_CUDA_ARCHITECTURES OFF)
  enable_language(CUDA)
  # CMake 3.25 predates nvcc 13 and does not know its C++20 switch; tell it.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION OR CMAKE_CUDA20_STANDARD_COMPILE_OPTION STREQUAL "")
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)

  set(MOEKIT_CUDA_GENCODE_FLAGS "")
  foreach(arch IN LISTS MOEKIT_CUDA_ARCHS)
    if(NOT arch MATCHES "^[0-9]+[af]?$")
      message(FATAL_ERROR "MOEKIT_CUDA_ARCHS: '${arch}' is not an architecture such as 90a or 80")
    endif()
    list(APPEND MOEKIT_CUDA_GENCODE_FLAGS "-gencode=arch=compute_${arch},code=sm_${arch}")
  endforeach()
  set(MOEKIT_CUDA_ARCHS_EFFECTIVE "${MOEKIT_CUDA_ARCHS}")

  # CUTLASS/CuTe headers, pinned by scripts/bootstrap.sh into third_party/.
  set(MOEKIT_CUTLASS_PINNED_VERSION "4.2.0")
  set(MOEKIT_CUTLASS_DIR "${PROJECT_SOURCE_DIR}/third_party/cutlass-${MOEKIT_CUTLASS_PINNED_VERSION}"
      CACHE PATH "CUTLASS source or install prefix (the folder holding include/cutlass and include/cute)")
  find_path(MOEKIT_CUTLASS_INCLUDE cutlass/version.h
            PATHS "${MOEKIT_CUTLASS_DIR}/include" "${MOEKIT_CUTLASS_DIR}" NO_DEFAULT_PATH)
  if(NOT MOEKIT_CUTLASS_INCLUDE OR NOT EXISTS "${MOEKIT_CUTLASS_INCLUDE}/cute/tensor.hpp")
    message(FATAL_ERROR "CUTLASS/CuTe headers not found under MOEKIT_CUTLASS_DIR='${MOEKIT_CUTLASS_DIR}'. "
                        "Run scripts/bootstrap.sh (fetches CUTLASS ${MOEKIT_CUTLASS_PINNED_VERSION}), or "
                        "point the build at an existing checkout with -DMOEKIT_CUTLASS_DIR=/path/to/cutlass, "
                        "or configure with -DMOEKIT_CUDA=OFF.")
  endif()
  file(STRINGS "${MOEKIT_CUTLASS_INCLUDE}/cutlass/version.h" _cutlass_ver REGEX "#define CUTLASS_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" _cutlass_ver "${_cutlass_ver}")
  if(NOT _cutlass_ver VERSION_EQUAL MOEKIT_CUTLASS_PINNED_VERSION)
    message(WARNING "CUTLASS ${_cutlass_ver} found, moekit is tested with ${MOEKIT_CUTLASS_PINNED_VERSION}")
  endif()
  set(MOEKIT_CUTLASS_VERSION "${_cutlass_ver}")
endif()
