#!/usr/bin/env bash
# demo_fresh_machine.sh - the README's demo times: scripts/demo.sh on a fresh Debian 12, then
# from a clean clone with the packages installed, then again with everything in place.
#
# The fresh machine is a Debian 12 minbase root (what every Debian install has: the
# required packages and apt), made with mmdebstrap from this host's apt sources and run
# as a chroot with the host's /dev, /sys and a fresh /proc and /run. The repository's
# committed HEAD is cloned into it, so that nothing built here leaks in. Prints the three
# wall times; each run's output is kept in the work folder.
#
#   scripts/bench/demo_fresh_machine.sh [WORK_DIR]    (default: a new folder under $TMPDIR or /tmp)
# Needs root, mmdebstrap, and what the lab needs on the host (/dev/net/tun).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-$(mktemp -d -t demo-fresh.XXXXXX)}
CHROOT=$WORK/root
((EUID == 0)) || { echo "demo_fresh_machine.sh: needs root (chroot, mounts)" >&2; exit 2; }
command -v mmdebstrap >/dev/null ||
  { echo "demo_fresh_machine.sh: needs mmdebstrap (scripts/setup.sh)" >&2; exit 2; }

unmount_all() { mountpoint -q "$CHROOT" && umount -R "$CHROOT"; return 0; }
trap unmount_all EXIT

# A bind mount makes the chroot's / a mount point, as `ip netns` needs; /dev and /sys are
# the host's (the lab's QEMU needs /dev/net/tun), /proc and /run its own.
mount_machine() {
  mount --bind "$CHROOT" "$CHROOT"
  mount --rbind /dev "$CHROOT/dev" && mount --make-rslave "$CHROOT/dev"
  mount --rbind /sys "$CHROOT/sys" && mount --make-rslave "$CHROOT/sys"
  mount -t proc proc "$CHROOT/proc"
  mount -t tmpfs tmpfs "$CHROOT/run"
}

# Runs the demo in the chroot; prints its wall time in seconds. $1 names the run's log.
timed_demo() {
  local log=$WORK/$1.log start status=0
  mount_machine
  start=$(date +%s)
  chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    bash -c 'cd /root/fabrickit && scripts/demo.sh' >"$log" 2>&1 || status=$?
  echo $(($(date +%s) - start))
  unmount_all
  ((status == 0)) || { echo "demo_fresh_machine.sh: the $1 run failed; see $log" >&2; exit 1; }
}

[[ -e $CHROOT ]] && { echo "demo_fresh_machine.sh: $CHROOT exists; give a new WORK_DIR" >&2; exit 1; }
mkdir -p "$WORK"
echo "making a Debian 12 minbase in $CHROOT" >&2
mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$CHROOT"
# The host's apt settings (proxies, snapshot mirrors) and name servers, as a fresh machine
# on this network would have them.
cp -r /etc/apt/apt.conf.d/. "$CHROOT/etc/apt/apt.conf.d/"
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
git clone --quiet "$ROOT" "$CHROOT/root/fabrickit"

echo "fresh machine: packages, build, demo" >&2
fresh=$(timed_demo fresh)
rm -rf "$CHROOT/root/fabrickit/build"
echo "clean clone, packages installed: build, demo" >&2
clean=$(timed_demo clean)
echo "again: demo" >&2
again=$(timed_demo again)

printf 'fresh machine:                   %d s\n' "$fresh"
printf 'clean clone, packages installed: %d s\n' "$clean"
printf 'again:                           %d s\n' "$again"
echo "logs: $WORK/{fresh,clean,again}.log; remove $WORK when done" >&2
