#!/usr/bin/env bash
# setup.sh - install every Debian package fabrickit needs to build, test and run its lab,
# and the npm packages of the unit tier's schema check (tests/deploy/schema/node_modules).
#
# Idempotent and quiet: when everything is present it prints nothing and exits 0. It asks
# apt only for what is missing (one `apt-get update` first, as a fresh machine needs).
#   scripts/setup.sh           install what is missing
#   scripts/setup.sh --demo    only what scripts/demo.sh needs (no fuzzing compiler, browser
#                              or container tools: a fresh machine's demo starts sooner)
#   scripts/setup.sh --check   list what is missing; exit 1 if anything is
set -euo pipefail

# Build: compiler, CMake, and the libraries of DESIGN.md's dependency list.
BUILD_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libibverbs-dev librdmacm-dev
  libnl-3-dev libnl-route-3-dev
  rapidjson-dev libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev
  libssl-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev
  prometheus-cpp-dev libcivetweb-dev zlib1g-dev libnetfilter-acct-dev libmnl-dev
)
# On the host, for the demo and the tests alike: namespaces and veth, jq, the reference CNI
# plugins (host-local and static IPAM, macvlan as the benchmark's peer), both iptables
# backends and nfacct (the exporter's accounting), a real Prometheus server and promtool,
# curl.
HOST_PACKAGES=(iproute2 kmod jq containernetworking-plugins iptables nfacct prometheus curl)
# Tests only: iperf3 as the TCP probe's peer, clang for the libFuzzer targets,
# node_exporter as the RDMA collector's peer in benchmarks, chromium, headless, to check
# that the demo's report renders, ipset to read the accounting's sets independently of
# the exporter (which speaks ip_set's netlink itself and needs no ipset program).
HOST_TEST_PACKAGES=(iperf3 clang prometheus-node-exporter chromium ipset)
# The soft-RoCE lab (scripts/lab.sh): a Debian kernel that ships rdma_rxe, QEMU, the
# initramfs' busybox, and rdma-core's tools (rdma, ibv_devinfo, perftest as the peer);
# sshd, which a lab node runs with throw-away keys so that mpirun can start ranks on it.
LAB_PACKAGES=(
  qemu-system-x86 linux-image-amd64 busybox-static cpio
  rdma-core ibverbs-utils perftest
  openssh-server
)

# The container image (scripts/image.sh): podman with runc, and mmdebstrap to make its
# Debian base where no registry can be reached; for its DaemonSet under `podman kube play`
# (tests/deploy/kube_play_test.sh), catatonit (a pod's infra container, only recommended
# by podman) and python3-yaml (the DaemonSet's pod template made a Pod).
IMAGE_PACKAGES=(podman runc mmdebstrap catatonit python3-yaml)
# Node.js and npm for the unit tier's schema check of deploy/ (tests/deploy/schema): npm
# installs Kubernetes' OpenAPI schemas (kubernetes-models) there, pinned by its lockfile.
# Either counts as present when its command is on PATH: a Node.js from another source
# brings its own npm, and Debian's npm package would conflict with it.
NODE_PACKAGES=(nodejs npm)
SCHEMA_DIR=$(cd "$(dirname "$0")/.." && pwd)/tests/deploy/schema

DEMO_PACKAGES=("${BUILD_PACKAGES[@]}" "${HOST_PACKAGES[@]}" "${LAB_PACKAGES[@]}")
ALL_PACKAGES=("${DEMO_PACKAGES[@]}" "${HOST_TEST_PACKAGES[@]}" "${IMAGE_PACKAGES[@]}"
  "${NODE_PACKAGES[@]}")
WANTED=("${ALL_PACKAGES[@]}")

missing_packages() {
  local pkg status
  for pkg in "${WANTED[@]}"; do
    case $pkg in
      nodejs) command -v node >/dev/null && continue ;;
      npm) command -v npm >/dev/null && continue ;;
    esac
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [[ $status == installed ]] || printf '%s\n' "$pkg"
  done
}

# The stamp holds the checksum of the lockfile node_modules was installed from.
schema_packages_current() {
  local stamp=$SCHEMA_DIR/node_modules/.installed-from
  [[ -f $stamp ]] && [[ $(cat "$stamp") == "$(sha256sum <"$SCHEMA_DIR/package-lock.json")" ]]
}

install_schema_packages() {
  schema_packages_current && return 0
  echo "setup.sh: installing the npm packages of tests/deploy/schema" >&2
  npm ci --prefix "$SCHEMA_DIR" --no-audit --no-fund --loglevel=error >/dev/null
  sha256sum <"$SCHEMA_DIR/package-lock.json" >"$SCHEMA_DIR/node_modules/.installed-from"
}

main() {
  local check_only=0 schema=1
  case "${1:-}" in
    "") ;;
    --demo) WANTED=("${DEMO_PACKAGES[@]}") schema=0 ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; return 0 ;;
    *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; return 1 ;;
  esac

  local missing
  mapfile -t missing < <(missing_packages)
  if ((check_only)); then
    ((schema)) && ! schema_packages_current && missing+=("npm:tests/deploy/schema")
    ((${#missing[@]} == 0)) && return 0
    printf 'missing: %s\n' "${missing[*]}"
    return 1
  fi
  install_debian_packages "${missing[@]}"
  ((schema)) && install_schema_packages
  return 0
}

install_debian_packages() {
  local missing=("$@")
  ((${#missing[@]} == 0)) && return 0
  if ((EUID != 0)); then
    echo "setup.sh: these packages are missing and installing them needs root: ${missing[*]}" >&2
    return 2
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} > 0)); then
    echo "setup.sh: still missing after apt-get install: ${missing[*]}" >&2
    return 2
  fi
}

main "$@"
