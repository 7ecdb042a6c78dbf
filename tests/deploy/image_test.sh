#!/usr/bin/env bash
# The container image as a cluster runs it: scripts/image.sh builds it (and its base from
# the Debian archive, the first time), then every binary answers --version inside it, which
# proves its shared libraries are all in the runtime stage.
#   image_test.sh REPO
# Slow (a whole build inside the image: about 25 minutes on 2 cores), so it has a label of
# its own, `image`, which scripts/test.sh runs only when asked: FABRIC_TEST_TIERS=image.
set -euo pipefail
repo=${1:?usage: image_test.sh REPO}
if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null; then
  echo "SKIP: podman and mmdebstrap are needed (scripts/setup.sh installs them)"
  exit 77
fi
tag=localhost/fabrickit:test-$$
"$repo/scripts/image.sh" --tag "$tag" >/dev/null
# shellcheck source=scripts/lib/podman.sh
source "$repo/scripts/lib/podman.sh"
conf=$(mktemp)
podman_setup "$conf"
trap '"${PODMAN[@]}" rmi -f "$tag" >/dev/null 2>&1; rm -f "$conf"' EXIT
for binary in fabric-probe fabric-cni fabric-pfc fabric-nccltest fabric-exporter; do
  out=$("${PODMAN[@]}" run --rm --network none "$tag" "$binary" --version)
  echo "$out" | head -1
  [[ $out == "$binary "* ]] || { echo "FAIL: $binary --version in the image: $out" >&2; exit 1; }
done
# nccl-tests' program names are links to fabric-nccltest on the image's PATH.
perf_names="all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf broadcast_perf reduce_perf sendrecv_perf"
out=$("${PODMAN[@]}" run --rm --network none "$tag" sh -c \
  "for n in $perf_names; do \$n --version | head -1; done")
[[ $(grep -c '^fabric-nccltest ' <<<"$out") == 7 ]] ||
  { echo "FAIL: nccl-tests' program names in the image: $out" >&2; exit 1; }
echo "PASS: every binary runs in $tag"
