#!/bin/bash
# Runs as PID 1 inside every lab VM, chrooted into the host's filesystem (see
# init), after the initramfs has mounted the lab's control directory at
# /run/fabric-lab. It brings up the node's share of the fabric, waits until the
# whole lab is ready, runs the user's command and powers the VM off.
#
# Protocol with scripts/lab.sh (all files in the control directory):
#   lab.env       run parameters written by lab.sh (bash `declare -p` output)
#   argv, env     the command and extra environment, NUL-separated
#   nodeK.booted  written when this script starts
#   nodeK.up      written once the node's address and rxe0 are configured
#   nodeK.ready   written once rxe0 has its RoCE v2 GID and all peers answer
#   go            written by lab.sh once every node is ready (the barrier)
#   nodeK.out/err the command's stdout/stderr (lab.sh streams them)
#   nodeK.rc      the command's exit status, written after it finished
#   halt          written by lab.sh once every node's command finished; until
#                 then the node stays up, so that its peers can still reach it
#   nodeK.error   why this node could not run the command
# Files are written to a temporary name and renamed, so lab.sh never reads a
# half-written file. The node number comes from the kernel command line.
#
# Diagnostics go to the console (the VM's serial port), which lab.sh keeps in
# a log and shows when something fails.

set -euo pipefail

# The initramfs left a minimal PATH; the host's userland lives in the usual places.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly CTL=/run/fabric-lab
readonly RDMA_DEV=rxe0
NODE=

# Console messages carry the uptime, so slow boot steps are easy to spot.
log() {
    local up
    read -r up _ </proc/uptime
    printf '[%9s] lab-node%s: %s\n' "$up" "$NODE" "$*" >&2
}

power_off() {
    # No init system runs here: ask the kernel directly.
    "$LAB_BUSYBOX" poweroff -f 2>/dev/null || echo o >/proc/sysrq-trigger
    # The power-off is asynchronous; PID 1 must not exit meanwhile (that
    # panics the kernel).
    while :; do sleep 60; done
}

# Publish a control file atomically.
publish() { # NAME CONTENT
    printf '%s\n' "$2" >"$CTL/.$1.tmp"
    mv -f "$CTL/.$1.tmp" "$CTL/$1"
}

fail() {
    log "error: $*"
    publish "node$NODE.error" "$*" || true
    power_off
}

on_unexpected_exit() {
    fail "node setup failed (exit $1) at line $2: $3"
}

read_node_number() {
    local word
    for word in $(</proc/cmdline); do
        case $word in fablab.node=*) NODE=${word#fablab.node=} ;; esac
    done
    [[ $NODE =~ ^[0-9]+$ ]] || { NODE='?' LAB_BUSYBOX=busybox; fail "no fablab.node= on the kernel command line"; }
}

# Poll CONDITION (a command) every STEP seconds for at most SECS seconds.
wait_for() { # SECS STEP CONDITION...
    local secs=$1 step=$2 start=$SECONDS
    shift 2
    until "$@"; do
        ((SECONDS - start < secs)) || return 1
        sleep "$step"
    done
}

find_nic_by_mac() {
    local dev
    for dev in /sys/class/net/*; do
        if [[ $(<"$dev/address") == "$MAC" ]]; then
            NETDEV=${dev##*/}
            return 0
        fi
    done
    return 1
}

bring_up_network() {
    modprobe virtio_net
    wait_for 20 0.05 find_nic_by_mac || fail "no NIC with MAC $MAC appeared"
    ip link set lo up
    # IPv4 only: keeps the lab quiet and the GID table small and predictable
    # (index 0: the default link-local GID, index 1: ::ffff:<IPv4>).
    echo 1 >"/proc/sys/net/ipv6/conf/$NETDEV/disable_ipv6"
    ip addr add "$ADDR/$LAB_PREFIX_LEN" dev "$NETDEV"
    ip link set "$NETDEV" up
}

# sysfs spells GIDs as eight groups of four hex digits.
ipv4_mapped_gid() { # IPV4
    local a b c d
    IFS=. read -r a b c d <<<"$1"
    printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
}

find_roce_v2_gid() {
    local port=/sys/class/infiniband/$RDMA_DEV/ports/1 gid idx type
    for gid in "$port"/gids/*; do
        [[ -r $gid ]] || continue
        [[ $(<"$gid") == "$WANT_GID" ]] || continue
        idx=${gid##*/}
        type=$(cat "$port/gid_attrs/types/$idx" 2>/dev/null) || continue
        if [[ $type == "RoCE v2" ]]; then
            GID_INDEX=$idx
            return 0
        fi
    done
    return 1
}

bring_up_rxe() {
    modprobe rdma_rxe
    rdma link add "$RDMA_DEV" type rxe netdev "$NETDEV"
    WANT_GID=$(ipv4_mapped_gid "$ADDR")
    wait_for 20 0.05 find_roce_v2_gid || fail "$RDMA_DEV has no RoCE v2 GID for $ADDR"
}

peer_is_up() { [[ -e $CTL/node$1.up ]]; }
peer_answers() { "$LAB_BUSYBOX" ping -c1 -W1 -q "$1" >/dev/null 2>&1; }

# Pinging a peer before it has its address costs a whole ping timeout, so
# first wait for the peer to say it is up.
wait_for_peers() {
    local peer
    for ((peer = 1; peer <= LAB_NODES; peer++)); do
        ((peer == NODE)) && continue
        wait_for "$LAB_READY_TIMEOUT" 0.05 peer_is_up "$peer" || fail "node$peer never came up"
        wait_for "$LAB_READY_TIMEOUT" 0 peer_answers "${LAB_ADDRS[peer - 1]}" ||
            fail "node$peer (${LAB_ADDRS[peer - 1]}) does not answer ping"
    done
}

# The shared directory appears at the same path as on the host when the root
# is writable (overlay); otherwise under /run.
mount_shared_dir() {
    SHARED=$LAB_SHARED
    if ! mkdir -p "$SHARED" 2>/dev/null; then
        SHARED=/run/fabric-lab-shared
        mkdir -p "$SHARED"
    fi
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none shared "$SHARED"
}

go_given() { [[ -e $CTL/go ]]; }
halt_given() { [[ -e $CTL/halt ]]; }

# Run the user's command in a clean environment and record its status.
run_command() {
    local -a argv extra_env
    mapfile -d '' -t argv <"$CTL/argv"
    mapfile -d '' -t extra_env <"$CTL/env"
    local out=$CTL/node$NODE.out err=$CTL/node$NODE.err rc=0

    ulimit -l unlimited
    trap - EXIT
    set +e
    (
        # Start from an empty environment, like `env -i`, but without env's
        # rule that a command name containing '=' is an assignment.
        for name in $(compgen -e); do unset "$name"; done
        export PATH=$LAB_PATH HOME=/tmp USER=root LOGNAME=root
        export FABRIC_LAB_NODE=$NODE
        export FABRIC_LAB_NODES=$LAB_NODES
        export FABRIC_LAB_ADDR=$ADDR
        export FABRIC_LAB_ADDRS="${LAB_ADDRS[*]}"
        export FABRIC_LAB_NETDEV=$NETDEV
        export FABRIC_LAB_RDMA_DEV=$RDMA_DEV
        export FABRIC_LAB_GID_INDEX=$GID_INDEX
        export FABRIC_LAB_SHARED=$SHARED
        # shellcheck disable=SC2163 # the values are NAME=VALUE strings
        for kv in "${extra_env[@]}"; do export "$kv"; done
        exec "${argv[@]}"
    ) </dev/null >>"$out" 2>>"$err"
    rc=$?
    set -e
    # lab.sh prefixes each line when there are several nodes; an unterminated
    # last line would run into the next node's output.
    if ((LAB_NODES > 1)); then
        local f
        for f in "$out" "$err"; do
            if [[ -s $f && -n $(tail -c 1 "$f") ]]; then echo >>"$f"; fi
        done
    fi
    publish "node$NODE.rc" "$rc"
}

main() {
    read_node_number
    # shellcheck source=/dev/null
    source "$CTL/lab.env"
    trap 'on_unexpected_exit $? $LINENO "$BASH_COMMAND"' EXIT
    publish "node$NODE.booted" ""
    echo "node$NODE" >/proc/sys/kernel/hostname

    ADDR=${LAB_ADDRS[NODE - 1]}
    MAC=${LAB_MACS[NODE - 1]}
    log "setting up $ADDR"
    bring_up_network
    log "network up on $NETDEV"
    bring_up_rxe
    log "$RDMA_DEV up, RoCE v2 GID index $GID_INDEX"
    publish "node$NODE.up" ""
    mount_shared_dir
    cd "$LAB_CWD" || fail "cannot enter the working directory $LAB_CWD"
    wait_for_peers
    publish "node$NODE.ready" "$GID_INDEX"
    log "ready"

    # lab.sh bounds the whole run and kills the VM if the barrier never opens.
    wait_for 86400 0.05 go_given
    log "running the command"
    run_command
    log "command exited with status $(<"$CTL/node$NODE.rc"), waiting for the other nodes"
    wait_for 86400 0.1 halt_given
    log "powering off"
    power_off
}

main "$@"
