# shellcheck shell=bash
# podman.sh - podman as fabrickit runs it, for scripts/image.sh and the image tests.
# Sourced; the caller owns FILE and removes it.
#
#   podman_setup FILE          writes podman's settings into FILE (a containers.conf)
#   "${PODMAN[@]}" ARGS...     podman with them; an array, so that a prefix such as
#                              `nsenter --net=...` can run it too
#
# runc and cgroupfs, and no default ulimits: as root on hosts where crun or those ulimits
# are refused, podman works only so. The containers.conf carries them as well as the flags,
# for what podman starts itself (`kube play`'s containers, `build`'s RUN steps).
podman_setup() {
  cat >"$1" <<'CONF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
  # shellcheck disable=SC2034 # the callers' command
  PODMAN=(env CONTAINERS_CONF="$1" podman --runtime runc --cgroup-manager cgroupfs)
}
