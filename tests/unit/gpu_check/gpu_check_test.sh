#!/usr/bin/env bash
# The GPU check's parts that run without a GPU: gpu_check_prepare.sh makes a folder under
# 64 MiB in which every program finds each library it needs, the GPU stack (libcuda,
# libnccl, libcudart) and glibc aside, inside the folder; and gpu_check.sh, run from that
# folder and from the build tree, checks the binaries load, then stops at its first GPU
# step with exit 77, saying what a GPU run would prove.
#   gpu_check_test.sh SOURCE_DIR BUILD_DIR SANITIZED(0|1)
# A sanitized tree's programs are several times larger than the 64 MiB that an optimised
# tree's folder must stay under; there the bound checked is 256 MiB.
set -uo pipefail
SRC=$1 BUILD=$2 SANITIZED=${3:-0}
max_mib=64
((SANITIZED)) && max_mib=256
WORK=$(mktemp -d -t gpu_check_test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ -e /proc/driver/nvidia/gpus ]] || nvidia-smi -L >/dev/null 2>&1; then
  echo "this machine has a GPU: the no-GPU path cannot be exercised here"
  exit 77
fi

"$SRC/scripts/gpu_check_prepare.sh" --max-mib "$max_mib" "$WORK/bundle" "$BUILD" ||
  fail "gpu_check_prepare.sh failed"
size=$(du -sb "$WORK/bundle" | cut -f1)
((size < max_mib << 20)) || fail "the folder holds $size bytes, more than $max_mib MiB"
for b in "$WORK"/bundle/bin/* "$WORK"/bundle/lib/*; do
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    case "$name" in
      libcuda.so* | libnccl.so* | libcudart.so*) continue ;;
      ld-linux-x86-64.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
        libresolv.so* | libutil.so*) continue ;;
    esac
    [[ $path == "$WORK/bundle/lib/"* ]] || fail "$(basename "$b") finds $name at $path, outside the folder"
  done < <(LD_LIBRARY_PATH=$WORK/bundle/lib ldd "$b")
done
[[ -x $WORK/bundle/bin/fabric-nccltest && -x $WORK/bundle/bin/fabric-probe &&
  -f $WORK/bundle/lib/libnccl-profiler-fabric.so && -x $WORK/bundle/gpu_check.sh ]] ||
  fail "the folder lacks a program: $(ls -R "$WORK/bundle")"
compgen -G "$WORK/bundle/bin/fabric_gpu_*tests" >/dev/null || fail "no gpu-tier test program"

for how in bundle tree; do
  if [[ $how == bundle ]]; then
    env -u LD_LIBRARY_PATH "$WORK/bundle/gpu_check.sh" --out "$WORK/out-$how" >"$WORK/$how.log" 2>&1
  else
    FABRIC_BUILD=$BUILD "$SRC/scripts/gpu_check.sh" --out "$WORK/out-$how" >"$WORK/$how.log" 2>&1
  fi
  rc=$?
  cat "$WORK/$how.log"
  ((rc == 77)) || fail "$how: exit $rc, not 77"
  grep -q '^bundle  *pass' "$WORK/$how.log" || fail "$how: the binaries did not load"
  grep -q 'no GPU here; stopped before the first GPU step' "$WORK/$how.log" || fail "$how: no reason given"
  grep -q 'within 2% of NVIDIA.s all_reduce_perf' "$WORK/$how.log" || fail "$how: does not say what a GPU run proves"
  grep -q -- '-g over every GPU from one process and -t 2' "$WORK/$how.log" || fail "$how: does not say it runs -g and -t"
  python3 - "$WORK/out-$how/summary.json" <<'PY' || fail "$how: summary.json"
import json, sys
doc = json.load(open(sys.argv[1]))
steps = {s["name"]: s["state"] for s in doc["steps"]}
assert steps == {"bundle": "pass", "gpu": "skip"}, steps
assert doc["failed"] == [], doc["failed"]
PY
done
echo "PASS"
