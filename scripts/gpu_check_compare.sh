# shellcheck shell=bash
# gpu_check_compare.sh - sourced by gpu_check.sh: how it compares fabric-nccltest's times
# with nccl-tests' all_reduce_perf. Pure text in, text out, so that the verdict is tested
# without a GPU (tests/unit/gpu_check/compare_test.sh, on times an H200 gave).

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
