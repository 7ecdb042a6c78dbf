#!/usr/bin/env bash
# gpu_check.sh - proves fabrickit's GPU side in one command on one NVIDIA GPU: the node
# needs its driver and a Python whose NCCL and CUDA runtime wheels (nvidia/nccl and
# nvidia/cu13 or nvidia/cuda_runtime under site-packages) provide libnccl.so.2 and
# libcudart.so.*; CUDA's compiler only to build nccl-tests there; no network, no packages. It runs from the folder that
# scripts/gpu_check_prepare.sh makes here (bin/, lib/, this script), or from a source
# tree with build/release.
#
#   gpu_check.sh [--nccl-tests SRC_DIR] [--out DIR] [--quick]
#     --nccl-tests  NVIDIA's nccl-tests source, built here (make MPI=0) for the comparison;
#                   without it, bin/all_reduce_perf from gpu_check_prepare.sh --nccl-tests
#     --out         where the logs and the summary go (default: a new temporary folder)
#     --quick       sizes up to 64 MiB and one type/op per collective (a smoke run)
#
# Steps (each one a line of the summary, with its figures):
#   bundle     the binaries load (ldd): everything found but the GPU stack
#   gpu        a GPU is there (nvidia-smi or /proc/driver/nvidia); else exit 77 here
#   stack      libnccl.so.2 and libcudart found, fabric-nccltest reports its NCCL version
#   coll:NAME  each of the seven collectives, 8 B to 1 GiB, -c 1, every type and op the
#              nccl backend offers: 0 wrong, checks on the device
#   graph, blocking, average   -G 4, -z 1 and -a 1 once each: 0 wrong
#   memalloc, register:1, register:2   buffers from ncclMemAlloc; -R 1 and -R 2, 0 wrong
#   stream_null, cta_policy, memory_report   -y 1, -x 1 and -M 1: 0 wrong, each one's header
#              line, and -M's nccl-tests line after the footer holding the buffers
#   gpus_per_process, threads   with 2 GPUs or more: -g <all GPUs> from one process, then
#              -t 2 -g <half> with -G and -R 1, 0 wrong, one device line per GPU; split_gpus:
#              NCCL_TESTS_SPLIT with -t 2 -g <half> -x 1 -M 1, 0 wrong, every GPU in group 0
#   fp8_mulsum  -d f8e4m3 and -d f8e5m2 named (Hopper and NCCL 2.24 run them) with every
#              op, mulsum included: 0 wrong
#   drop_in    -z 3 -u 1 -C 1 -S 1 -N 2 (nccl-tests flags) once: 0 wrong
#   per_iteration  all_reduce_perf -b 8 -e 1M -I 1 -K 2 (the program name): nccl-tests'
#              per-iteration header lines, and every row i_min, i_max, i_p99, i_cv% after
#              each #wrong from CUDA events, ordered (i_min <= i_p99 <= i_max), 0 wrong
#   vs_nccl_tests  all_reduce_perf -g 1 and fabric-nccltest alternating five times: time
#              per size within 2% of all_reduce_perf's median wherever the GPU's copy, not
#              the launch, is timed (nccl-tests' time at least 4x its 8 B time), start-up
#              at most 1.2x (skipped, and named, without --nccl-tests)
#   gpu_tests  the gpu test tier's programs (bin/fabric_*gpu_tests), run on this folder's
#              binaries; the nccl backend's per-collective test under the node's mpirun
#   topo, lint fabric-probe topo and fabric-probe lint --gpu 0 on the real sysfs
#   profiler   the NCCL profiler plugin loaded by that NCCL (its INFO line), and its file
#              against the operations and bytes of the run
#   plugin_cost  all-reduce 8 B and 64 MiB, eager and -G, with and without the plugin
# Writes OUT/summary.json and OUT/summary.txt; exits 0 when every step passed, 1 naming
# the steps that failed, 77 without a GPU (after the steps that need none).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
NCCL_TESTS_SRC=""
OUT=""
QUICK=0
while (($#)); do
  case "$1" in
    --nccl-tests) NCCL_TESTS_SRC=$(realpath "$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "gpu_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n $OUT ]] || OUT=$(mktemp -d -t gpu_check.XXXXXX)
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

# The binaries: the prepared folder, else a source tree's release build.
if [[ -x $HERE/bin/fabric-nccltest ]]; then
  BIN=$HERE/bin LIB=$HERE/lib
  PLUGIN=$LIB/libnccl-profiler-fabric.so
else
  BUILD=${FABRIC_BUILD:-$HERE/../build/release}
  BIN=$BUILD/nccltest LIB=""
  PLUGIN=$BUILD/exporters/nccl_profiler/libnccl-profiler-fabric.so
fi
NCCLTEST=$BIN/fabric-nccltest
PROBE=$BIN/fabric-probe
[[ -x $PROBE ]] || PROBE=${BUILD:-}/probes/fabric-probe
GPU_TESTS=("$BIN"/fabric_*gpu_tests)
[[ -e ${GPU_TESTS[0]} ]] || GPU_TESTS=("${BUILD:-}"/tests/fabric_*gpu_tests)

declare -a STEP_NAMES STEP_STATES STEP_DETAILS
FAILED=()
record() { # record NAME pass|fail|skip DETAIL
  STEP_NAMES+=("$1") STEP_STATES+=("$2") STEP_DETAILS+=("$3")
  [[ $2 == fail ]] && FAILED+=("$1")
  printf '%-16s %-5s %s\n' "$1" "$2" "$3"
}

json_escape() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' <<<"$1" | tr -d '\n'; }
write_summary() {
  {
    printf '{"schema_version":1,"out":"%s","steps":[' "$(json_escape "$OUT")"
    local i sep=""
    for i in "${!STEP_NAMES[@]}"; do
      printf '%s{"name":"%s","state":"%s","detail":"%s"}' "$sep" "${STEP_NAMES[$i]}" \
        "${STEP_STATES[$i]}" "$(json_escape "${STEP_DETAILS[$i]}")"
      sep=","
    done
    printf '],"failed":['
    sep=""
    for i in "${FAILED[@]}"; do printf '%s"%s"' "$sep" "$i"; sep=","; done
    printf ']}\n'
  } >"$OUT/summary.json"
  {
    printf '%-16s %-5s %s\n' step state figures
    for i in "${!STEP_NAMES[@]}"; do
      printf '%-16s %-5s %s\n' "${STEP_NAMES[$i]}" "${STEP_STATES[$i]}" "${STEP_DETAILS[$i]}"
    done
  } >"$OUT/summary.txt"
}

# --- Without a GPU -------------------------------------------------------------------
# bundle: every binary loads with the folder's libraries; only the GPU stack may be absent.
missing=""
for b in "$NCCLTEST" "$PROBE" "$PLUGIN" "${GPU_TESTS[@]}"; do
  if [[ ! -e $b ]]; then
    missing+=" $(basename "$b"):absent"
    continue
  fi
  for lib in $(LD_LIBRARY_PATH=${LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$b" 2>/dev/null |
    awk '/not found/ { print $1 }'); do
    case "$lib" in libcuda.so* | libnccl.so* | libcudart.so*) ;; *) missing+=" $(basename "$b"):$lib" ;; esac
  done
done
if [[ -z $missing ]]; then
  record bundle pass "$(basename "$NCCLTEST"), $(basename "$PROBE"), the plugin and ${#GPU_TESTS[@]} gpu test programs load"
else
  record bundle fail "missing:$missing"
fi

# gpu: the first GPU step. Without one, say what a run would prove, and stop.
GPU_NAME=""
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
if [[ -z $GPU_NAME ]] && compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null; then
  GPU_NAME=$(awk -F': *' '/^Model/ { print $2; exit }' /proc/driver/nvidia/gpus/*/information)
fi
if [[ -z $GPU_NAME ]]; then
  record gpu skip "no NVIDIA GPU on this machine"
  write_summary
  cat <<'MSG'
gpu_check.sh: no GPU here; stopped before the first GPU step (exit 77).
On a GPU node this check proves, in one run:
  - fabric-nccltest's nccl backend on the GPU, one rank: all seven collectives from 8 B to
    1 GiB with -c 1 and every type and op, 0 wrong elements, data checked on the device;
    -G, -z 1 and -a 1 once each; buffers from ncclMemAlloc, -R 1 and -R 2 checked clean;
    -I 1 -K 2's per-iteration columns timed with CUDA events;
    with two GPUs or more, -g over every GPU from one process and -t 2;
  - its time per size within 2% of NVIDIA's all_reduce_perf (median of five alternating
    runs) wherever the GPU's time, not the launch, is timed, and its start-up at most 1.2x;
  - the gpu test tier, fabric-probe topo and fabric-probe lint --gpu 0 on the real sysfs;
  - the NCCL profiler plugin loaded by that NCCL, its file matching the run's operations
    and bytes, and what it costs an all-reduce (8 B and 64 MiB, eager and -G).
MSG
  exit 77
fi
record gpu pass "$GPU_NAME"

# --- The GPU stack: NCCL and the CUDA runtime from the node's Python wheels ----------
find_lib_dir() { # find_lib_dir RELATIVE_DIR FILE_GLOB
  local base
  for base in $(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null) \
    /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages; do
    compgen -G "$base/$1/$2" >/dev/null && { echo "$base/$1"; return 0; }
  done
  return 1
}
NCCL_DIR=$(find_lib_dir nvidia/nccl/lib 'libnccl.so.2') || NCCL_DIR=""
# CUDA 13's wheels put the runtime under nvidia/cu13/lib; CUDA 12's under cuda_runtime.
CUDART_DIR=$(find_lib_dir nvidia/cu13/lib 'libcudart.so.*') ||
  CUDART_DIR=$(find_lib_dir nvidia/cuda_runtime/lib 'libcudart.so.*') || CUDART_DIR=""
export LD_LIBRARY_PATH=${LIB:+$LIB:}${NCCL_DIR:+$NCCL_DIR:}${CUDART_DIR:+$CUDART_DIR:}${LD_LIBRARY_PATH:-}
# One rank without MPI (NCCL refuses two ranks on one GPU): nccltest/README.md, "Launch".
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=${MASTER_PORT:-29517}
run_nccltest() { "$NCCLTEST" --backend nccl "$@"; }
# Its first line: "# fabric-nccltest V (nccl-tests V output), backend nccl, NCCL library 2.28.9 ..."
version=$(run_nccltest -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 | grep -m1 -o 'NCCL library [0-9.]*' || true)
if [[ -n $version ]]; then
  record stack pass "$version; nccl ${NCCL_DIR:-from the default path}; cudart ${CUDART_DIR:-from the default path}"
else
  record stack fail "fabric-nccltest --backend nccl did not start: $(run_nccltest -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 | tail -2 | tr '\n' ' ')"
fi

# wrong_of LOG: the "Out of bounds values" figure of a fabric-nccltest report.
wrong_of() { awk -F': *' '/Out of bounds values/ { split($2, a, " "); print a[1] }' "$1"; }
# checked_run NAME DETAIL ARGS...: one fabric-nccltest run that must exit 0 with 0 wrong.
checked_run() {
  local name=$1 detail=$2 log=$OUT/$1.log start end wrong rc
  shift 2
  start=$(date +%s.%N)
  run_nccltest "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  wrong=$(wrong_of "$log")
  if ((rc == 0)) && [[ $wrong == 0 ]]; then
    record "$name" pass "$detail; 0 wrong; $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
  else
    record "$name" fail "$detail; exit $rc, wrong '${wrong:-?}': $(grep -v '^#' "$log" | tail -1)"
  fi
  grep -q 'data checks run on the host' "$log" && record "$name:checks" fail "checks ran on the host: $(grep -m1 'data checks run on the host' "$log")"
}

MAX=1G TYPES=all OPS=all
((QUICK)) && MAX=64M TYPES=float OPS=sum
for coll in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
  checked_run "coll:$coll" "8 B..$MAX, -d $TYPES -o $OPS, -c 1" \
    --collective "$coll" -b 8 -e "$MAX" -f 2 -n 5 -w 1 -c 1 -d "$TYPES" -o "$OPS"
done
checked_run graph "all_reduce -G 4" -b 8 -e 64M -f 4 -n 5 -c 1 -G 4
checked_run blocking "all_reduce -z 1" -b 8 -e 64M -f 4 -n 5 -c 1 -z 1
checked_run average "all_reduce -a 1" -b 8 -e 64M -f 4 -n 5 -c 1 -a 1
for fp8 in f8e4m3 f8e5m2; do
  checked_run "fp8_mulsum:$fp8" "all_reduce -d $fp8 -o all" -b 8 -e 64M -f 4 -n 5 -c 1 -d "$fp8" -o all
done
checked_run drop_in "-z 3 -u 1 -C 1 -S 1 -N 2" -b 8 -e 64M -f 4 -n 5 -c 1 -z 3 -u 1 -C 1 -S 1 -N 2

# per_iteration: nccl-tests' -I 1 -K 2 as a script types it, through the program name.
ln -sf "$NCCLTEST" "$OUT/all_reduce_perf"
"$OUT/all_reduce_perf" --backend nccl -b 8 -e 1M -I 1 -K 2 >"$OUT/per_iteration.log" 2>&1
rc=$?
# Fields: 9 and 17 #wrong, 10-13 and 18-21 i_min, i_max, i_p99, i_cv% of each placement.
rows=$(awk '!/^#/ && NF > 0' "$OUT/per_iteration.log" | wc -l)
good=$(awk '!/^#/ && NF == 21 && $9 == 0 && $17 == 0 && $10 + 0 > 0 && $10 <= $12 && $12 <= $11 &&
  $13 >= 0 && $18 + 0 > 0 && $18 <= $20 && $20 <= $19 && $21 >= 0' "$OUT/per_iteration.log" | wc -l)
if ((rc == 0 && rows > 0 && good == rows)) &&
  grep -q '^# Per-Iteration Report: CUDA event timing; i_\* uses max over process rows; summary skips first 2 iterations $' "$OUT/per_iteration.log" &&
  grep -qE '^# +size +count +type +redop +root +time +algbw +busbw +#wrong +i_min +i_max +i_p99 +i_cv% +time ' "$OUT/per_iteration.log"; then
  record per_iteration pass "$rows rows with i_min/i_max/i_p99/i_cv% per placement, 0 wrong"
else
  record per_iteration fail "exit $rc; $good of $rows rows with 21 ordered fields: $(grep -v '^#' "$OUT/per_iteration.log" | tail -1)"
fi

# --- nccl-tests' -g, -t and -R; ncclMemAlloc ---------------------------------------------
# has_line NAME LOG REGEX DETAIL: a step that passes when the run's log has the line.
has_line() {
  if grep -qE "$3" "$2"; then record "$1" pass "$4"; else record "$1" fail "$4: no line matching '$3' in $2"; fi
}
has_line memalloc "$OUT/coll:all_reduce.log" '^# buffers from ncclMemAlloc' \
  "the buffers come from ncclMemAlloc, as nccl-tests allocates them"
checked_run register:1 "all_reduce -R 1" -b 8 -e 64M -f 4 -n 5 -c 1 -R 1
has_line register:1:line "$OUT/register:1.log" 'registered with ncclCommRegister' "ncclCommRegister in use"
checked_run register:2 "all_reduce -R 2" -b 8 -e 64M -f 4 -n 5 -c 1 -R 2
has_line register:2:line "$OUT/register:2.log" 'symmetric windows|Defaulting to local registration' \
  "symmetric windows (NCCL 2.27 and later) or nccl-tests' fallback line"

# --- nccl-tests' -y, -x and -M ------------------------------------------------------------
checked_run stream_null "all_reduce -y 1" -b 8 -e 64M -f 4 -n 5 -c 1 -y 1
has_line stream_null:line "$OUT/stream_null.log" "legacy default stream \(-y 1\)" \
  "every operation on CUDA's legacy default stream"
checked_run cta_policy "all_reduce -x 1" -b 8 -e 64M -f 4 -n 5 -c 1 -x 1
has_line cta_policy:line "$OUT/cta_policy.log" \
  'CTAPolicy 1 \(-x\)|Option -x \(cta_policy\) is not supported before NCCL 2\.27' \
  "CTAPolicy 1 on the communicator (NCCL 2.27 and later) or nccl-tests' line"
checked_run memory_report "all_reduce -M 1" -b 8 -e 64M -f 4 -n 5 -c 1 -M 1
# The line as nccl-tests' writeMemInfo prints it, right after the concluded line; the two
# 64 MiB buffers (ncclMemAlloc may round them up) are in User-Allocated.
user_mb=$(awk '/^# GPU memory usage     : Initialization -?[0-9.]+ [KMG]?B \| User-Allocated -?[0-9.]+ [KMG]?B \| Collective -?[0-9.]+ [KMG]?B \| Total  -?[0-9.]+ [KMG]?B$/ {
  for (i = 1; i <= NF; ++i) if ($i == "User-Allocated") { v = $(i + 1); u = $(i + 2) }
  print (u == "GB" ? v * 1024 : u == "MB" ? v : u == "KB" ? v / 1024 : v / 1048576) }' "$OUT/memory_report.log")
concluded_then_memory=$(grep -A1 '^# Collective test concluded' "$OUT/memory_report.log" | grep -c '^# GPU memory usage')
if [[ -n $user_mb ]] && ((concluded_then_memory == 1)) && awk -v m="$user_mb" 'BEGIN { exit !(m >= 128) }'; then
  record memory_report:line pass "$(grep -m1 '^# GPU memory usage' "$OUT/memory_report.log")"
else
  record memory_report:line fail "no nccl-tests memory line after the footer, or User-Allocated '${user_mb:-?}' MB below the 128 MB of buffers"
fi
# Several GPUs per process need as many GPUs (NCCL refuses two ranks on one GPU).
NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[[ ${NGPUS:-0} -gt 0 ]] || NGPUS=$(compgen -G "/proc/driver/nvidia/gpus/*" | wc -l)
if ((NGPUS >= 2)); then
  checked_run gpus_per_process "-g $NGPUS: one process drives every GPU" \
    -b 8 -e 64M -f 4 -n 5 -c 1 -g "$NGPUS" -d all -o sum
  ranks=$(grep -c '^#  Rank ' "$OUT/gpus_per_process.log")
  ((ranks == NGPUS)) && record gpus_per_process:devices pass "$ranks device lines" ||
    record gpus_per_process:devices fail "$ranks device lines for $NGPUS GPUs"
  checked_run threads "-t 2 -g $((NGPUS / 2)) -G 4 -R 1" \
    -b 8 -e 64M -f 4 -n 5 -c 1 -t 2 -g $((NGPUS / 2)) -G 4 -R 1
  # One process is one colour: its GPUs' communicators split together (one NCCL group per
  # thread), every GPU in group 0, then run on the split communicators.
  NCCL_TESTS_SPLIT="AND 0" checked_run split_gpus "NCCL_TESTS_SPLIT='AND 0' -t 2 -g $((NGPUS / 2)) -x 1 -M 1" \
    -b 8 -e 64M -f 4 -n 5 -c 1 -t 2 -g $((NGPUS / 2)) -x 1 -M 1
  groups=$(grep -c '^#  Rank  *[0-9]* Group  *0 ' "$OUT/split_gpus.log")
  if ((groups == NGPUS / 2 * 2)); then
    record split_gpus:groups pass "$groups device lines in group 0"
  else
    record split_gpus:groups fail "$groups device lines in group 0 for $((NGPUS / 2 * 2)) GPUs"
  fi
else
  record gpus_per_process skip "one GPU: -g/-t above 1 need as many GPUs (the unit tier covers their call order)"
  record threads skip "one GPU"
  record split_gpus skip "one GPU"
fi

# --- Against NVIDIA's nccl-tests -------------------------------------------------------
# build_all_reduce_perf, median, times and judge_comparison.
# shellcheck source=gpu_check_compare.sh
. "$HERE/gpu_check_compare.sh"
ART=""
if [[ -z $NCCL_TESTS_SRC && -x $BIN/all_reduce_perf ]]; then
  ART=$BIN/all_reduce_perf # built by gpu_check_prepare.sh --nccl-tests
elif [[ -z $NCCL_TESTS_SRC ]]; then
  record vs_nccl_tests skip "no --nccl-tests SRC_DIR given and no bin/all_reduce_perf"
elif ! ART=$(build_all_reduce_perf "$NCCL_TESTS_SRC" "$NCCL_DIR/libnccl.so.2" \
  "$(dirname "$NCCL_DIR")/include" "$OUT/nccl-tests"); then
  ART=""
  record vs_nccl_tests fail "building nccl-tests failed: $(tail -1 "$OUT/nccl-tests/build.log")"
fi
if [[ -n $ART ]]; then
  args=(-b 8 -e 1G -f 2 -n 20 -w 5 -c 0)
  : >"$OUT/cmp_nt" && : >"$OUT/cmp_fab" && : >"$OUT/start_nt" && : >"$OUT/start_fab"
  for round in 1 2 3 4 5; do
    "$ART" -g 1 "${args[@]}" >"$OUT/nt_$round.log" 2>&1
    run_nccltest "${args[@]}" >"$OUT/fab_$round.log" 2>&1
    times "$OUT/nt_$round.log" >>"$OUT/cmp_nt"
    times "$OUT/fab_$round.log" >>"$OUT/cmp_fab"
    s=$(date +%s.%N); "$ART" -g 1 -b 8 -e 8 -n 1 -w 0 -c 0 >/dev/null 2>&1; e=$(date +%s.%N)
    awk -v a="$s" -v b="$e" 'BEGIN { print b - a }' >>"$OUT/start_nt"
    s=$(date +%s.%N); run_nccltest -b 8 -e 8 -n 1 -w 0 -c 0 >/dev/null 2>&1; e=$(date +%s.%N)
    awk -v a="$s" -v b="$e" 'BEGIN { print b - a }' >>"$OUT/start_fab"
  done
  # A one-rank all-reduce is a device-to-device copy: until the copy outlasts the launch,
  # both programs time the host issuing an operation (5 to 7 us a call on an H200, 8 B to
  # 8 MiB), which moved by up to 20% between rounds of the same program. On an H200 two
  # runs gave 0.78 to 0.94 at 1 to 4 MiB in one and 1.06 to 1.19 in the other. The goal is
  # judged where the GPU's time dominates: sizes whose nccl-tests median is at least four
  # times its 8 B median; the launch-bound sizes are reported, not judged.
  read -r worst worst_size judged table < <(judge_comparison "$OUT/cmp_nt" "$OUT/cmp_fab")
  echo "$table" >"$OUT/vs_nccl_tests_ratios.txt"
  start_ratio=$(awk -v a="$(median <"$OUT/start_nt")" -v b="$(median <"$OUT/start_fab")" 'BEGIN { printf "%.2f", b / a }')
  detail="time ratio worst $worst (at $worst_size B) over $judged sizes past launch-bound; start-up ratio $start_ratio; per size: ${table//,/ }"
  if ((judged > 0)) && awk -v w="$worst" -v s="$start_ratio" 'BEGIN { exit !(w <= 1.02 && s <= 1.2) }'; then
    record vs_nccl_tests pass "$detail"
  else
    record vs_nccl_tests fail "$detail (goals: <= 1.02, start-up <= 1.2)"
  fi
fi

# --- The gpu test tier, fabric-probe on the real sysfs ----------------------------------
# The tests run this folder's programs, not the build tree's paths compiled into them.
export FABRIC_PROBE_BINARY=$PROBE FABRIC_NCCLTEST_BINARY=$NCCLTEST FABRIC_NCCL_PROFILER_PLUGIN=$PLUGIN
FABRIC_MPIEXEC=$(command -v mpirun || true)
export FABRIC_MPIEXEC
for t in "${GPU_TESTS[@]}"; do
  name=gpu_tests:$(basename "$t")
  if "$t" >"$OUT/$(basename "$t").log" 2>&1; then
    record "$name" pass "$(grep -m1 -o '\[  PASSED  \] [0-9]* tests\?' "$OUT/$(basename "$t").log"); $(grep -c '\[  SKIPPED \]' "$OUT/$(basename "$t").log") skipped"
  else
    record "$name" fail "$(grep -m1 'FAILED' "$OUT/$(basename "$t").log")"
  fi
done
"$PROBE" topo >"$OUT/topo.log" 2>&1
rc=$?
if ((rc == 0)); then record topo pass "$(head -c 200 "$OUT/topo.log" | tr '\n' ' ')"; else record topo fail "exit $rc: $(tail -1 "$OUT/topo.log")"; fi
"$PROBE" lint --gpu 0 >"$OUT/lint.log" 2>&1
rc=$?
# 3: a rule found something on this node (no RoCE NIC, say), which is an answer, not a failure.
if ((rc == 0 || rc == 3)); then record lint pass "exit $rc: $(grep -c . "$OUT/lint.log") lines"; else record lint fail "exit $rc: $(tail -1 "$OUT/lint.log")"; fi

# --- The NCCL profiler plugin in that NCCL ----------------------------------------------
PROF=$OUT/profiler
mkdir -p "$PROF"
ITERS=7 CHECKS=1
NCCL_PROFILER_PLUGIN=$PLUGIN FABRIC_NCCL_DIR=$PROF FABRIC_NCCL_FLUSH_S=1 NCCL_DEBUG=INFO \
  run_nccltest -b 1M -e 1M -n "$ITERS" -w 0 -c "$CHECKS" >"$OUT/profiler.log" 2>&1
rc=$?
file=$(find "$PROF" -name 'nccl-*.prof' | head -1)
loaded=$(grep -m1 -o 'fabric profiler: writing [^ ]*' "$OUT/profiler.log")
if ((rc != 0)) || [[ -z $file || -z $loaded ]]; then
  record profiler fail "exit $rc; INFO line '${loaded:-none}'; file '${file:-none}'"
else
  # Per placement: one untimed operation, the timed ones, the checks (in place too).
  want_ops=$((2 * (1 + ITERS + CHECKS)))
  got=$(awk '$1 == "cell" && $2 == "all_reduce" && $3 == 1048576 { for (i = 4; i < NF; i += 2) if ($i == "ops") o = $(i + 1); else if ($i == "bytes") b = $(i + 1) } END { print o + 0, b + 0 }' "$file")
  nranks=$(awk '$1 == "comm" { print $4; exit }' "$file")
  read -r ops bytes <<<"$got"
  if [[ $(head -1 "$file") != "fabric-nccl-profile 1" || $(tail -1 "$file") != end ]]; then
    record profiler fail "the file is not a complete version-1 profile"
  elif ((ops == want_ops && bytes == want_ops * 1048576)); then
    record profiler pass "$loaded; all_reduce 1 MiB: $ops ops, $bytes bytes, as run"
  elif [[ $nranks == 1 && $ops == 0 ]]; then
    # NCCL does not profile a one-rank communicator's local copies (the plugin's README).
    record profiler pass "$loaded; one-rank communicator: 0 ops counted, as NCCL profiles no local copy"
  else
    record profiler fail "all_reduce 1 MiB: $ops ops and $bytes bytes counted, $want_ops ops and $((want_ops * 1048576)) bytes run"
  fi
fi

# The plugin's cost (issue 28): the median of three alternating runs, with and without.
cost=""
for size in 8 64M; do
  for graph in 0 4; do
    : >"$OUT/cost_with" && : >"$OUT/cost_without"
    for round in 1 2 3; do
      run_nccltest -b "$size" -e "$size" -n 200 -w 20 -c 0 -G "$graph" | times /dev/stdin | awk '{ print $2 }' >>"$OUT/cost_without"
      NCCL_PROFILER_PLUGIN=$PLUGIN FABRIC_NCCL_DIR=$PROF run_nccltest -b "$size" -e "$size" -n 200 -w 20 -c 0 -G "$graph" |
        times /dev/stdin | awk '{ print $2 }' >>"$OUT/cost_with"
    done
    a=$(median <"$OUT/cost_without") b=$(median <"$OUT/cost_with")
    cost+="$size/G$graph: $a us -> $b us ($(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')x) "
  done
done
record plugin_cost pass "$cost"

write_summary
echo
cat "$OUT/summary.txt"
if ((${#FAILED[@]})); then
  echo "gpu_check.sh: FAILED: ${FAILED[*]} (logs in $OUT)"
  exit 1
fi
echo "gpu_check.sh: every step passed (logs and summary.json in $OUT)"
