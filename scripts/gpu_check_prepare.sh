#!/usr/bin/env bash
# gpu_check_prepare.sh - the folder that scripts/gpu_check.sh runs from on an air-gapped
# GPU node: the release binaries (fabric-nccltest, fabric-probe, the NCCL profiler plugin,
# the gpu-tier test programs), stripped of debug information, and every shared library they
# load that such a node may lack. Left out: glibc's own libraries (the node has a glibc at
# least as new; the loader must match it) and libcuda, libnccl and libcudart, which belong
# to the node's driver and its Python's NCCL and CUDA wheels (gpu_check.sh finds them).
#
#   scripts/gpu_check_prepare.sh [--max-mib N] OUT_DIR [BUILD_DIR]   (default build/release)
# Fails if a binary is missing, a library cannot be resolved here, or the folder exceeds
# 64 MiB (--max-mib: a sanitized tree's programs are several times larger, and only an
# optimised tree's are meant to travel).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
max_mib=64
if [[ ${1:-} == --max-mib ]]; then
  max_mib=$2
  shift 2
fi
OUT=${1:?usage: gpu_check_prepare.sh [--max-mib N] OUT_DIR [BUILD_DIR]}
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
for test in "$BUILD"/tests/fabric_gpu_*tests; do
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
cp "$ROOT/scripts/gpu_check.sh" "$OUT/"
chmod +x "$OUT/gpu_check.sh"

size=$(du -sb "$OUT" | cut -f1)
if ((size > LIMIT_BYTES)); then
  echo "gpu_check_prepare.sh: $OUT holds $size bytes, more than $max_mib MiB" >&2
  exit 1
fi
echo "gpu_check_prepare.sh: $OUT: ${#binaries[@]} programs, $(find "$OUT/lib" -type f | wc -l) libraries, $((size / 1024)) KiB"
