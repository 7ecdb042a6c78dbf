# Build options. Optional features are tri-state where the machine decides: AUTO turns a
# feature on when its dependency is found, ON makes a missing dependency a configure error,
# OFF leaves it out (its commands then answer "not built", exit 4).

option(WITH_VERBS "Build RDMA support (libibverbs, librdmacm)" ON)
set(WITH_NCCL AUTO CACHE STRING "Build NCCL/CUDA support: AUTO, ON or OFF")
set_property(CACHE WITH_NCCL PROPERTY STRINGS AUTO ON OFF)
set(WITH_MPI AUTO CACHE STRING "Build MPI support: AUTO, ON or OFF")
set_property(CACHE WITH_MPI PROPERTY STRINGS AUTO ON OFF)
option(FABRIC_WERROR "Treat compiler warnings as errors" OFF)
option(FABRIC_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
set(FABRIC_CUDA_ROOT /usr/local/cuda CACHE PATH "Where NCCL and the CUDA runtime live")
# fabric-nccltest's data checks on the GPU: kernels compiled by FABRIC_CUDA_ROOT's nvcc and
# embedded in the binary (nccltest/CMakeLists.txt). Without them the checks run on the host.
set(FABRIC_CHECK_KERNELS AUTO CACHE STRING "Build the GPU check kernels with nvcc: AUTO, ON or OFF")
set_property(CACHE FABRIC_CHECK_KERNELS PROPERTY STRINGS AUTO ON OFF)
# A unity build compiles each library's and program's sources as one translation unit per
# batch: the headers every file includes (CLI11, fmt, RapidJSON, the standard library) are
# parsed, and their inline functions compiled, once per batch instead of once per file. A
# clean build of the five binaries takes half the time on a 2-core machine; changing one
# file recompiles its whole batch. Test programs stay one unit per file (tests/), and a
# tree without it (the sanitized one in scripts/build.sh) checks that every file compiles
# on its own.
option(FABRIC_UNITY "Compile sources in batches (a unity build): faster clean builds" OFF)
set(FABRIC_UNITY_BATCH_SIZE 16 CACHE STRING "Sources per unity batch; 0 puts each target in one")

foreach(opt WITH_NCCL WITH_MPI FABRIC_CHECK_KERNELS)
  if(NOT ${opt} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${opt} must be AUTO, ON or OFF (got '${${opt}}')")
  endif()
endforeach()

# Warnings and sanitizers go on an interface target that every fabrickit target links,
# rather than on global flags, so that nothing leaks into dependencies' checks.
add_library(fabric_build_flags INTERFACE)
add_library(fabric::build_flags ALIAS fabric_build_flags)
target_compile_options(fabric_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wformat=2)
if(FABRIC_WERROR)
  target_compile_options(fabric_build_flags INTERFACE -Werror)
endif()
if(FABRIC_SANITIZE)
  target_compile_options(fabric_build_flags INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
    # GCC's instrumentation makes -Wmaybe-uninitialized report false positives inside
    # libstdc++ (std::regex, std::function); the release build keeps the warning.
    -Wno-maybe-uninitialized)
  target_link_options(fabric_build_flags INTERFACE -fsanitize=address,undefined)
endif()
if(FABRIC_UNITY)
  # Initializes UNITY_BUILD on every target defined after this point; tests/ turns it off.
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${FABRIC_UNITY_BATCH_SIZE})
endif()
