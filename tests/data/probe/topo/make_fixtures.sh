#!/usr/bin/env bash
# Rebuilds the sysfs/procfs trees beside this script, one folder per node layout, each
# standing for "/" (ROOT/sys, ROOT/proc) the way the kernel lays them out: device folders
# nested under their host bridge and PCIe switch ports in sys/devices, relative symlinks
# from sys/bus/pci/devices, sys/class/infiniband and sys/class/net, a `device` link from
# each RDMA device and netdev to its PCI function, `driver` links, RDMA ports with GID
# tables, and the NVIDIA driver's files in proc.
#
# The layouts are those of servers whose `nvidia-smi topo -m` output is published (see
# tests/unit/probe/topology_test.cpp for the matrices and where they come from). Bus
# numbers follow each server where the output or NCCL's topology dump gives them; switch
# port numbers in between are made up.
#
#   tests/data/probe/topo/make_fixtures.sh      # rewrites every fixture
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=
SYS=
declare -A FN_PATH FN_NUMA FN_CPUS

begin() {
  ROOT=$HERE/$1
  SYS=$ROOT/sys
  rm -rf "$ROOT"
  mkdir -p "$SYS/devices" "$SYS/bus/pci/devices" "$SYS/bus/pci/drivers" "$SYS/class/infiniband" \
    "$SYS/class/net" "$SYS/module" "$ROOT/proc/sys/kernel"
  FN_PATH=()
  FN_NUMA=()
  FN_CPUS=()
}

put() { # put FILE CONTENT
  mkdir -p "$(dirname "$1")"
  printf '%s\n' "$2" >"$1"
}

kernel() { put "$ROOT/proc/sys/kernel/osrelease" "$1"; }

# hostbridge NAME NUMA CPULIST: a PCI root bus (sys/devices/pciDDDD:BB).
hostbridge() {
  mkdir -p "$SYS/devices/$1"
  FN_PATH[$1]=$SYS/devices/$1
  FN_NUMA[$1]=$2
  FN_CPUS[$1]=$3
}

# fn PARENT BDF CLASS VENDOR DEVICE [DRIVER]: a PCI function below PARENT (a host bridge
# or a function), inheriting its NUMA node and CPUs.
fn() {
  local parent=$1 bdf=$2 dir=${FN_PATH[$1]}/$2
  mkdir -p "$dir"
  FN_PATH[$bdf]=$dir
  FN_NUMA[$bdf]=${FN_NUMA[$parent]}
  FN_CPUS[$bdf]=${FN_CPUS[$parent]}
  put "$dir/class" "$3"
  put "$dir/vendor" "$4"
  put "$dir/device" "$5"
  put "$dir/numa_node" "${FN_NUMA[$bdf]}"
  put "$dir/local_cpulist" "${FN_CPUS[$bdf]}"
  ln -sr "$dir" "$SYS/bus/pci/devices/$bdf"
  if [[ -n ${6:-} ]]; then
    mkdir -p "$SYS/bus/pci/drivers/$6"
    ln -sr "$SYS/bus/pci/drivers/$6" "$dir/driver"
  fi
}

bridge() { fn "$1" "$2" 0x060400 "$3" "$4" pcieport; }

# gid_hex IPV4 -> sysfs's form of ::ffff:IPV4
gid_hex() {
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

# add_gids PORTDIR GID NETDEV: GID's RoCE v1 and v2 entries on NETDEV at the next free
# indexes, then an unused slot: all zeros, with no type file (the kernel refuses to read
# an unused slot's type).
add_gids() {
  local index=0 type
  [[ -d $1/gid_attrs/types ]] && index=$(find "$1/gid_attrs/types" -type f | wc -l)
  for type in "IB/RoCE v1" "RoCE v2"; do
    put "$1/gids/$index" "$2"
    put "$1/gid_attrs/types/$index" "$type"
    put "$1/gid_attrs/ndevs/$index" "$3"
    index=$((index + 1))
  done
  put "$1/gids/$index" "0000:0000:0000:0000:0000:0000:0000:0000"
}

# rdma_port DEVDIR LINK_LAYER NETDEV [IPV4]: port 1 with the GID table mlx5 and rxe build:
# link-local v1/v2 at 0/1, the address's v1/v2 at 2/3 (RoCE); one IB GID (InfiniBand).
rdma_port() {
  local port=$1/ports/1
  put "$port/state" "4: ACTIVE"
  put "$port/link_layer" "$2"
  if [[ $2 == InfiniBand ]]; then
    put "$port/gids/0" "fe80:0000:0000:0000:b859:9f03:00d4:0e2a"
    put "$port/gid_attrs/types/0" "IB/RoCE v1"
    return
  fi
  add_gids "$port" "fe80:0000:0000:0000:b859:9fff:fed4:0e2a" "$3"
  if [[ -n ${4:-} ]]; then add_gids "$port" "$(gid_hex "$4")" "$3"; fi
}

# pod_gids RDMA_DEV IPV4 NETDEV: the GIDs a pod's macvlan (NETDEV, in the pod's network
# namespace, so not in this sys/class/net) adds to the table of port 1, after the port's own.
pod_gids() { add_gids "$SYS/class/infiniband/$1/ports/1" "$(gid_hex "$2")" "$3"; }

# netdev DIR NAME: a netdev folder under device folder DIR, with its class link.
netdev() {
  put "$1/net/$2/mtu" 1500
  ln -sr "$1" "$1/net/$2/device"
  ln -sr "$1/net/$2" "$SYS/class/net/$2"
}

# nic PARENT BDF VENDOR DEVICE DRIVER RDMA_DEV LINK_LAYER NETDEV [IPV4]
nic() {
  local class=0x020000
  [[ $7 == InfiniBand ]] && class=0x020700
  fn "$1" "$2" "$class" "$3" "$4" "$5"
  local dir=${FN_PATH[$2]}
  mkdir -p "$dir/infiniband/$6"
  ln -sr "$dir" "$dir/infiniband/$6/device"
  ln -sr "$dir/infiniband/$6" "$SYS/class/infiniband/$6"
  rdma_port "$dir/infiniband/$6" "$7" "$8" "${9:-}"
  netdev "$dir" "$8"
}

# rxe NAME PCI_BDF NETDEV IPV4: soft-RoCE over a virtio NIC's netdev: the RDMA device is
# virtual (no parent, so no `device` link); the netdev sits on a virtio device below the
# PCI function.
rxe() {
  local virtio=${FN_PATH[$2]}/virtio1 dev=$SYS/devices/virtual/infiniband/$1
  mkdir -p "$virtio"
  netdev "$virtio" "$3"
  mkdir -p "$dev"
  ln -sr "$dev" "$SYS/class/infiniband/$1"
  rdma_port "$dev" Ethernet "$3" "$4"
}

# gpu PARENT BDF DEVICE UUID MODEL: an NVIDIA GPU with the driver's information file.
gpu() {
  fn "$1" "$2" 0x030200 0x10de "$3" nvidia
  put "$ROOT/proc/driver/nvidia/gpus/$2/information" "$(printf '%s\n' \
    "Model: 		 $5" "IRQ:   		 120" "GPU UUID: 	 $4" "Video BIOS: 	 92.00.19.00.01" \
    "Bus Type: 	 PCIe" "DMA Size: 	 47 bits" "DMA Mask: 	 0x7fffffffffff" \
    "Bus Location: 	 $2" "Device Minor: 	 0" "GPU Excluded:	 No")"
}

# nvidia_driver open|proprietary VERSION
nvidia_driver() {
  mkdir -p "$SYS/module/nvidia"
  put "$SYS/module/nvidia/version" "$2"
  local flavour="x86_64 Kernel Module"
  [[ $1 == open ]] && flavour="Open Kernel Module for x86_64"
  put "$ROOT/proc/driver/nvidia/version" "NVRM version: NVIDIA UNIX $flavour  $2  Release Build"
}

peermem() { put "$SYS/module/nvidia_peermem/version" "$1"; }

# --- DGX A100 ---------------------------------------------------------------------------
# Two AMD EPYC 7742 in NPS4 mode: eight NUMA nodes, one PCIe root complex each. Four of
# them carry a Broadcom PEX88096 (1000:c010), which Linux sees as two levels of switch:
# each GPU and each compute NIC sits below its own second-level switch, so every pair
# among GPU0, GPU1, mlx5_0 and mlx5_1 is PXB. Two dual-port storage NICs (mlx5_4/5,
# mlx5_10/11) sit on root ports of NUMA nodes without GPUs. DGX OS ships nvidia-peermem.
dgx_a100_quadrant() { # ROOTBUS NUMA CPUS RP L1 GPU_A NIC_A GPU_B NIC_B (buses: L2 up, down, device)
  local root=pci0000:$1 rp=0000:$1:01.1 l1=0000:$4:00.0 i=0 leaf up down dev kind name netdev ip
  hostbridge "$root" "$2" "$3"
  bridge "$root" "$rp" 0x1022 0x1483
  bridge "$rp" "$l1" 0x1000 0xc010
  for leaf in "$5" "$6" "$7" "$8"; do
    # leaf: "L2_UP_BUS L2_DOWN_BUS DEVICE_BUS gpu UUID" or "... nic RDMA_DEV NETDEV IPV4"
    read -r up down dev kind name netdev ip <<<"$leaf"
    local l1down=0000:$(printf '%02x' $((16#$4 + 1))):$(printf '%02x' $((i * 4))).0
    bridge "$l1" "$l1down" 0x1000 0xc010
    bridge "$l1down" "0000:$up:00.0" 0x1000 0xc010
    bridge "0000:$up:00.0" "0000:$down:00.0" 0x1000 0xc010
    if [[ $kind == gpu ]]; then
      gpu "0000:$down:00.0" "0000:$dev:00.0" 0x20b0 "$name" "NVIDIA A100-SXM4-40GB"
    else
      nic "0000:$down:00.0" "0000:$dev:00.0" 0x15b3 0x101b mlx5_core "$name" Ethernet "$netdev" "$ip"
    fi
    i=$((i + 1))
  done
}

begin dgx-a100
kernel 5.4.0-99-generic
nvidia_driver proprietary 470.161.03
peermem 470.161.03
dgx_a100_quadrant 00 3 48-63,176-191 01 \
  "05 06 07 gpu GPU-a100a100-0000-4000-8000-000000000000" \
  "0a 0b 0c nic mlx5_0 enp12s0np0 10.10.0.1" \
  "0d 0e 0f gpu GPU-a100a100-0000-4000-8000-000000000001" \
  "10 11 12 nic mlx5_1 enp18s0np0 10.10.1.1"
dgx_a100_quadrant 40 1 16-31,144-159 41 \
  "45 46 47 gpu GPU-a100a100-0000-4000-8000-000000000002" \
  "49 4a 4b nic mlx5_2 enp75s0np0 10.10.2.1" \
  "4c 4d 4e gpu GPU-a100a100-0000-4000-8000-000000000003" \
  "52 53 54 nic mlx5_3 enp84s0np0 10.10.3.1"
dgx_a100_quadrant 80 7 112-127,240-255 81 \
  "85 86 87 gpu GPU-a100a100-0000-4000-8000-000000000004" \
  "8b 8c 8d nic mlx5_6 enp141s0np0 10.10.6.1" \
  "8e 8f 90 gpu GPU-a100a100-0000-4000-8000-000000000005" \
  "92 93 94 nic mlx5_7 enp148s0np0 10.10.7.1"
dgx_a100_quadrant b0 5 80-95,208-223 b1 \
  "b5 b6 b7 gpu GPU-a100a100-0000-4000-8000-000000000006" \
  "b8 b9 ba nic mlx5_8 enp186s0np0 10.10.8.1" \
  "bb bc bd gpu GPU-a100a100-0000-4000-8000-000000000007" \
  "c0 c1 c2 nic mlx5_9 enp194s0np0 10.10.9.1"
hostbridge pci0000:60 2 32-47,160-175
bridge pci0000:60 0000:60:03.1 0x1022 0x1483
nic 0000:60:03.1 0000:61:00.0 0x15b3 0x101d mlx5_core mlx5_4 Ethernet enp97s0f0np0 10.20.0.1
nic 0000:60:03.1 0000:61:00.1 0x15b3 0x101d mlx5_core mlx5_5 Ethernet enp97s0f1np1 10.20.1.1
hostbridge pci0000:e0 6 96-111,224-239
bridge pci0000:e0 0000:e0:03.1 0x1022 0x1483
nic 0000:e0:03.1 0000:e1:00.0 0x15b3 0x101d mlx5_core mlx5_10 Ethernet enp225s0f0np0 10.20.2.1
nic 0000:e0:03.1 0000:e1:00.1 0x15b3 0x101d mlx5_core mlx5_11 Ethernet enp225s0f1np1 10.20.3.1

# --- HGX H800 ---------------------------------------------------------------------------
# Two Intel Sapphire Rapids sockets (one NUMA node each); every PCIe stack is its own host
# bridge. Each GPU shares a Broadcom PEX89000 switch (1000:c030, one level) with one
# ConnectX-7 (PIX); other stacks of its socket are NODE, the other socket SYS. mlx5_0, a
# NIC for storage, has a stack of its own on socket 0. NIC names follow the published
# output (mlx5_2 beside GPU0, mlx5_1 beside GPU4, ...). Open kernel module, no
# peer-memory module: GPUDirect RDMA goes through dma-buf. A pod's interface net1 sits on
# mlx5_8.
hgx_h800_stack() { # ROOTBUS NUMA CPUS GPU_UUID RDMA_DEV NETDEV IPV4
  local b=$((16#$1))
  hex() { printf '%02x' $((b + $1)); }
  hostbridge "pci0000:$1" "$2" "$3"
  bridge "pci0000:$1" "0000:$1:01.0" 0x8086 0x352a
  bridge "0000:$1:01.0" "0000:$(hex 1):00.0" 0x1000 0xc030
  bridge "0000:$(hex 1):00.0" "0000:$(hex 2):00.0" 0x1000 0xc030
  bridge "0000:$(hex 1):00.0" "0000:$(hex 2):01.0" 0x1000 0xc030
  gpu "0000:$(hex 2):00.0" "0000:$(hex 3):00.0" 0x2324 "$4" "NVIDIA H800"
  nic "0000:$(hex 2):01.0" "0000:$(hex 4):00.0" 0x15b3 0x1021 mlx5_core "$5" Ethernet "$6" "$7"
}

begin hgx-h800
kernel 5.15.0-91-generic
nvidia_driver open 535.129.03
socket0=0-47,96-143
socket1=48-95,144-191
hgx_h800_stack 15 0 $socket0 GPU-48004800-0000-4000-8000-000000000000 mlx5_2 ens108np0 10.30.2.1
hgx_h800_stack 27 0 $socket0 GPU-48004800-0000-4000-8000-000000000001 mlx5_4 ens110np0 10.30.4.1
hgx_h800_stack 37 0 $socket0 GPU-48004800-0000-4000-8000-000000000002 mlx5_6 ens112np0 10.30.6.1
hgx_h800_stack 5a 0 $socket0 GPU-48004800-0000-4000-8000-000000000003 mlx5_8 ens114np0 10.30.8.1
hgx_h800_stack 97 1 $socket1 GPU-48004800-0000-4000-8000-000000000004 mlx5_1 ens109np0 10.30.1.1
hgx_h800_stack a8 1 $socket1 GPU-48004800-0000-4000-8000-000000000005 mlx5_3 ens111np0 10.30.3.1
hgx_h800_stack b7 1 $socket1 GPU-48004800-0000-4000-8000-000000000006 mlx5_5 ens113np0 10.30.5.1
hgx_h800_stack d8 1 $socket1 GPU-48004800-0000-4000-8000-000000000007 mlx5_7 ens115np0 10.30.7.1
# A pod attached by fabric-cni to mlx5_8 (GPU3's NIC) through a macvlan named net1.
pod_gids mlx5_8 10.30.100.5 net1
hostbridge pci0000:48 0 $socket0
bridge pci0000:48 0000:48:01.0 0x8086 0x352a
nic 0000:48:01.0 0000:49:00.0 0x15b3 0x101d mlx5_core mlx5_0 Ethernet ens9f0np0 10.40.0.1

# --- Two-socket PCIe server -------------------------------------------------------------
# Two Intel Broadwell sockets, one host bridge each. Pairs of PCIe GPUs share a PLX PEX8747
# switch (PIX), two pairs per socket on different root ports (PHB); the only RDMA NIC, a
# ConnectX-3 Pro, is on socket 0, so GPU4..GPU7 reach it across the sockets (SYS).
# Proprietary driver on an old kernel, no peer-memory module: no GPUDirect RDMA.
plx_pair() { # PARENT_RP SWITCH_UP DOWN_BUS GPU_A GPU_B UUID_A UUID_B
  bridge "$1" "0000:$2:00.0" 0x10b5 0x8747
  bridge "0000:$2:00.0" "0000:$3:08.0" 0x10b5 0x8747
  bridge "0000:$2:00.0" "0000:$3:10.0" 0x10b5 0x8747
  gpu "0000:$3:08.0" "0000:$4:00.0" 0x15f8 "$6" "Tesla P100-PCIE-16GB"
  gpu "0000:$3:10.0" "0000:$5:00.0" 0x15f8 "$7" "Tesla P100-PCIE-16GB"
}

begin two-socket
kernel 4.4.0-93-generic
nvidia_driver proprietary 384.66
hostbridge pci0000:00 0 0-9,20-29
bridge pci0000:00 0000:00:01.0 0x8086 0x6f02
nic 0000:00:01.0 0000:01:00.0 0x15b3 0x1007 mlx4_core mlx4_0 Ethernet ens1 10.50.0.1
bridge pci0000:00 0000:00:02.0 0x8086 0x6f04
plx_pair 0000:00:02.0 02 03 04 05 GPU-10010010-0000-4000-8000-000000000000 \
  GPU-10010010-0000-4000-8000-000000000001
bridge pci0000:00 0000:00:03.0 0x8086 0x6f08
plx_pair 0000:00:03.0 06 07 08 09 GPU-10010010-0000-4000-8000-000000000002 \
  GPU-10010010-0000-4000-8000-000000000003
hostbridge pci0000:80 1 10-19,30-39
bridge pci0000:80 0000:80:02.0 0x8086 0x6f04
plx_pair 0000:80:02.0 82 83 84 85 GPU-10010010-0000-4000-8000-000000000004 \
  GPU-10010010-0000-4000-8000-000000000005
bridge pci0000:80 0000:80:03.0 0x8086 0x6f08
plx_pair 0000:80:03.0 86 87 88 89 GPU-10010010-0000-4000-8000-000000000006 \
  GPU-10010010-0000-4000-8000-000000000007

# --- A node without GPU -----------------------------------------------------------------
# One socket; a dual-port ConnectX-6 Dx (two functions of one device: PIX) and soft-RoCE
# (rxe0) over the onboard NIC's netdev, which has no PCI function of its own.
begin cpu-node
kernel 6.1.0-18-amd64
hostbridge pci0000:00 0 0-31
fn pci0000:00 0000:00:03.0 0x020000 0x1af4 0x1041 virtio-pci
rxe rxe0 0000:00:03.0 eth0 10.60.0.1
hostbridge pci0000:40 0 0-31
bridge pci0000:40 0000:40:01.1 0x1022 0x1483
nic 0000:40:01.1 0000:41:00.0 0x15b3 0x101d mlx5_core mlx5_0 Ethernet ens1f0np0 10.70.0.1
nic 0000:40:01.1 0000:41:00.1 0x15b3 0x101d mlx5_core mlx5_1 Ethernet ens1f1np1 10.70.1.1
