# shellcheck shell=bash
# gpu_check_compare.sh - sourced by gpu_check.sh (and gpu_check_prepare.sh for the build):
# how the check compares fabric-nccltest with nccl-tests' all_reduce_perf. The build of
# all_reduce_perf, then the comparison, pure text in and text out, so that the verdict is
# tested without a GPU (tests/unit/gpu_check/compare_test.sh, on times an H200 gave).

# nvcc_path: the nvcc on PATH, else CUDA_HOME's, else /usr/local/cuda's (the prepare script
# looks for NCCL's header and library beside the same one).
nvcc_path() { command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"; }

# build_all_reduce_perf SRC NCCL_LIB NCCL_INCLUDE WORK: nccl-tests' all_reduce_perf from its
# source SRC (make MPI=0), with nvcc_path's nvcc, linked against NCCL_LIB (a libnccl.so.2)
# with NCCL_INCLUDE's nccl.h, for sm_80, sm_90 and compute_90 PTX. Builds in WORK (its log: WORK/build.log) and prints the program's path.
# nvcc links libcudart dynamically, as nccl-tests' Makefile asks: at run time it and
# libnccl come from the node's wheels, like fabric-nccltest's.
build_all_reduce_perf() {
  local src=$1 nccl_lib=$2 nccl_include=$3 work=$4 nvcc
  nvcc=$(nvcc_path)
  mkdir -p "$work/nccl/lib"
  if [[ ! -x $nvcc ]]; then
    echo "no nvcc on PATH or in ${CUDA_HOME:-/usr/local/cuda}/bin" >"$work/build.log"
    return 1
  fi
  ln -sf "$nccl_lib" "$work/nccl/lib/libnccl.so"
  make -C "$src/src" -j"$(nproc)" MPI=0 CUDA_HOME="$(dirname "$(dirname "$nvcc")")" \
    NCCL_HOME="$work/nccl" CPPFLAGS="-I$nccl_include" BUILDDIR="$work/build" \
    NVCC_GENCODE="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=[sm_90,compute_90]" \
    "$work/build/all_reduce_perf" >"$work/build.log" 2>&1 || return 1
  echo "$work/build/all_reduce_perf"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# times LOG: "bytes out-of-place-time-us" per row of an nccl-tests-style table.
times() { awk '!/^#/ && NF >= 13 && $1 ~ /^[0-9]+$/ { print $1, $6 }' "$1"; }
# judge_comparison NT FAB: "WORST WORST_SIZE JUDGED TABLE" from two files of "bytes time"
# (several rounds each): per size the ratio of medians, FAB / NT; WORST over the sizes whose
# NT median is at least 4x NT's smallest size's (where the GPU, not the launch, is timed).
judge_comparison() {
  local nt=$1 fab=$2 size a b ratio floor="" worst=0 worst_size=none judged=0 table=""
  # shellcheck disable=SC2013 # one number per line
  for size in $(awk '{ print $1 }' "$nt" | sort -un); do
    a=$(awk -v s="$size" '$1 == s { print $2 }' "$nt" | median) || continue
    b=$(awk -v s="$size" '$1 == s { print $2 }' "$fab" | median) || continue
    [[ -n $floor ]] || floor=$a
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    table+="$size:$ratio,"
    if awk -v a="$a" -v f="$floor" 'BEGIN { exit !(a >= 4 * f) }'; then
      judged=$((judged + 1))
      if awk -v r="$ratio" -v w="$worst" 'BEGIN { exit !(r > w) }'; then worst=$ratio worst_size=$size; fi
    fi
  done
  echo "$worst $worst_size $judged ${table:-none}"
}
