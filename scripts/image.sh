#!/usr/bin/env bash
# image.sh - build fabrickit's container image with podman: every binary and the NCCL
# profiler plugin, on Debian 12, with only their runtime libraries (deploy/image/Containerfile).
#
# No registry is needed: the Containerfile's base, localhost/fabrickit-base:bookworm, is
# made here from the Debian archive with mmdebstrap when it is missing (kept for the next
# build). podman runs with runc and cgroupfs, and a containers.conf without default
# ulimits, so it works as root on hosts where crun or those ulimits are refused.
#   scripts/image.sh [--tag NAME] [--rebuild-base]   (default tag localhost/fabrickit:VERSION)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly BASE=localhost/fabrickit-base:bookworm
tag=
rebuild_base=0
while (($#)); do
  case $1 in
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument '$1' (try --help)" >&2; exit 1 ;;
  esac
done
version=$(sed -n 's/^project(fabrickit VERSION \([0-9.]*\).*/\1/p' "$REPO/CMakeLists.txt")
tag=${tag:-localhost/fabrickit:${version:-dev}}
log() { printf 'image.sh: %s\n' "$*" >&2; }

# podman's settings for this run only: a containers.conf of our own.
# shellcheck source=scripts/lib/podman.sh
source "$REPO/scripts/lib/podman.sh"
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
podman_setup "$conf"
pod() { "${PODMAN[@]}" "$@"; }

if ((rebuild_base)) || ! pod image exists "$BASE"; then
  log "making $BASE from the Debian archive (mmdebstrap, minbase)"
  tarball=$(mktemp --suffix=.tar)
  # minbase has apt; the Containerfile installs the rest. The archive's keys are checked.
  mmdebstrap --variant=minbase --include=ca-certificates bookworm "$tarball" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >&2
  pod import --change 'CMD ["/bin/bash"]' "$tarball" "$BASE" >&2
  rm -f "$tarball"
fi

log "building $tag"
pod build --pull=never --layers -t "$tag" -f "$REPO/deploy/image/Containerfile" "$REPO" >&2
echo "$tag"
