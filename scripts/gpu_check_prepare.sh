#!/usr/bin/env bash
# gpu_check_prepare.sh - the folder that scripts/gpu_check.sh runs from on an air-gapped
# GPU node: the release binaries (fabric-nccltest, fabric-probe, the NCCL profiler plugin,
# the gpu-tier test programs), stripped of debug information, and every shared library they
# load that such a node may lack. Left out: glibc's own libraries (the node has a glibc at
# least as new; the loader must match it) and libcuda, libnccl and libcudart, which belong
# to the node's driver and its Python's NCCL and CUDA wheels (gpu_check.sh finds them).
#
#   scripts/gpu_check_prepare.sh [--max-mib N] [--nccl-tests SRC] OUT_DIR [BUILD_DIR]
#     BUILD_DIR     default build/release
#     --nccl-tests  NVIDIA's nccl-tests source: its all_reduce_perf is built here with this
#                   machine's nvcc and NCCL headers (sm_80, sm_90 and compute_90 PTX) and put
#                   in bin/, so that gpu_check.sh compares against it without a compiler there
# Fails if a binary is missing, a library cannot be resolved here, or the folder exceeds
# 64 MiB (--max-mib: a sanitized tree's programs are several times larger, and only an
# optimised tree's are meant to travel).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
max_mib=64
nccl_tests_src=""
while [[ ${1:-} == --* ]]; do
  case "$1" in
    --max-mib) max_mib=$2; shift 2 ;;
    --nccl-tests) nccl_tests_src=$(realpath "$2"); shift 2 ;;
    *) echo "gpu_check_prepare.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
OUT=${1:?usage: gpu_check_prepare.sh [--max-mib N] [--nccl-tests SRC] OUT_DIR [BUILD_DIR]}
BUILD=${2:-$ROOT/build/release}
LIMIT_BYTES=$((max_mib << 20))

# Libraries the node provides: glibc's (matched to its loader) and the GPU stack's.
provided() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
      libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.*) return 0 ;;
    libcuda.so.* | libnccl.so.* | libcudart.so.*) return 0 ;;
  esac
  return 1
}

binaries=("$BUILD/nccltest/fabric-nccltest" "$BUILD/probes/fabric-probe"
  "$BUILD/exporters/nccl_profiler/libnccl-profiler-fabric.so")
for test in "$BUILD"/tests/fabric_*gpu_tests; do
  [[ -x $test ]] && binaries+=("$test")
done
for b in "${binaries[@]}"; do
  [[ -f $b ]] || { echo "gpu_check_prepare.sh: $b is not built (scripts/build.sh release)" >&2; exit 1; }
done
((${#binaries[@]} >= 4)) || { echo "gpu_check_prepare.sh: no gpu-tier test program in $BUILD/tests" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for b in "${binaries[@]}"; do
  dest=$OUT/bin
  [[ $b == *.so ]] && dest=$OUT/lib
  strip --strip-debug -o "$dest/$(basename "$b")" "$b"
  # ldd lists the whole closure; "not found" here would be not found there either.
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    provided "$name" && continue
    if [[ $path == "not" ]]; then
      echo "gpu_check_prepare.sh: $(basename "$b") needs $name, not found here" >&2
      exit 1
    fi
    [[ -e $OUT/lib/$name ]] || strip --strip-debug -o "$OUT/lib/$name" "$(realpath "$path")"
  done < <(ldd "$b")
done
if [[ -n $nccl_tests_src ]]; then
  # shellcheck source=gpu_check_compare.sh
  . "$ROOT/scripts/gpu_check_compare.sh"
  cuda_dir=$(dirname "$(dirname "$(nvcc_path)")")
  nccl_header=$(find "$cuda_dir/include" /usr/include -maxdepth 1 -name nccl.h 2>/dev/null | head -1)
  nccl_lib=$(find "$cuda_dir/lib64/" "$cuda_dir/lib/" /usr/lib/x86_64-linux-gnu/ -maxdepth 1 \
    -name 'libnccl.so.2' 2>/dev/null | head -1)
  [[ -n $nccl_header && -n $nccl_lib ]] ||
    { echo "gpu_check_prepare.sh: --nccl-tests needs nccl.h and libnccl.so.2 to build against" >&2; exit 1; }
  nt_build=$(mktemp -d -t nccl-tests.XXXXXX)
  trap 'rm -rf "$nt_build"' EXIT
  if ! program=$(build_all_reduce_perf "$nccl_tests_src" "$nccl_lib" "$(dirname "$nccl_header")" "$nt_build"); then
    tail -20 "$nt_build/build.log" >&2
    echo "gpu_check_prepare.sh: building nccl-tests' all_reduce_perf failed" >&2
    exit 1
  fi
  strip --strip-debug -o "$OUT/bin/all_reduce_perf" "$program"
fi
cp "$ROOT/scripts/gpu_check.sh" "$ROOT/scripts/gpu_check_compare.sh" "$OUT/"
chmod +x "$OUT/gpu_check.sh"

size=$(du -sb "$OUT" | cut -f1)
if ((size > LIMIT_BYTES)); then
  echo "gpu_check_prepare.sh: $OUT holds $size bytes, more than $max_mib MiB" >&2
  exit 1
fi
echo "gpu_check_prepare.sh: $OUT: ${#binaries[@]} programs, $(find "$OUT/lib" -type f | wc -l) libraries, $((size / 1024)) KiB"
