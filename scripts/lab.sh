#!/usr/bin/env bash
# lab.sh - run a command on a throw-away soft-RoCE lab of QEMU VMs.
#
# Boots N VMs on one private L2 segment, gives each an IPv4 address and a
# soft-RoCE device (rdma_rxe) on its virtio NIC, and runs a command on every
# node in the caller's working directory. See usage() for the interface.
#
# How it works:
#  - The VMs boot the host's own kernel with a tiny cached initramfs (busybox
#    plus the virtio/9p/overlayfs modules, init from scripts/lab/init). The
#    host's / is exported read-only over virtio-9p and becomes the guest's
#    root under a RAM overlay, so the guest runs the host's userland, build
#    trees and modules at the same paths.
#  - Emulation is pure TCG: KVM guests hang early in boot on the machines this
#    was built on, and TCG boots the Debian kernel in a few seconds anyway.
#  - Networking: one tap per VM on a bridge inside a network namespace that
#    this run creates and deletes. The namespace has no other interface and
#    no route, so no frame can leave the lab.
#  - Each VM gets a read-write 9p share of a per-run control directory:
#    lab.sh writes the command there, and scripts/lab/node-setup.sh (PID 1
#    after the initramfs) reports readiness, the command's output and its
#    exit status through it. Command output thereby never mixes with the
#    kernel console, which goes to a per-VM log used for diagnostics.

set -Eeuo pipefail
# Remember the last failed command: if it makes lab.sh exit (set -e), cleanup
# reports it as a lab failure.
trap 'FAILED_AT="line $LINENO: $BASH_COMMAND"' ERR

# COMMAND gets the caller's PATH; lab.sh itself also needs the sbin tools
# (ip, modprobe), which a non-login shell's PATH may lack.
readonly CALLER_PATH=$PATH
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_DIR
readonly GUEST_DIR=$SCRIPT_DIR/lab
readonly PROG=${0##*/}

readonly EXIT_USAGE=1
readonly EXIT_TIMEOUT=124
readonly EXIT_LAB_FAILURE=125

readonly MAX_NODES=64
readonly SUBNET_PREFIX=10.77.0
readonly SUBNET_PREFIX_LEN=24
# Modules the initramfs needs to reach the host's filesystem; their
# dependencies are resolved with modprobe. Everything else (virtio_net,
# rdma_rxe) is loaded later from the host's /lib/modules.
readonly INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

# Options.
NODES=1
TIMEOUT=300
BOOT_TIMEOUT=120
MEM_MB=1024
CPUS=
VERBOSE=0
CHECK_ONLY=0
SHARED_DIR=
EXTRA_ENV=()
COMMAND=()

# Run state, used by cleanup().
LAB_ID=fablab-$$-$(printf '%04x' "$RANDOM")
WORK=
NETNS_CREATED=0
QEMU_PIDS=()   # indexed by node number
QEMU_STARTS=() # their start times, see process_state
STREAM_PIDS=()
ORPHAN_GUARD=()
BUILD_TMP=     # a cache entry being built
EXIT_DELIBERATE=0
FAILED_AT=
START_MS=0

usage() {
    cat <<EOF
Usage: $PROG [OPTIONS] [--] COMMAND [ARGS...]

Boot a throw-away lab of N QEMU VMs on one private L2 segment, each with an
IPv4 address and a soft-RoCE device (rdma_rxe) on its virtio NIC, and run
COMMAND with ARGS on every node, in the caller's working directory.

The host's root filesystem is the VMs' root: the same tools, build trees and
PATH, at the same paths. Writes inside a VM go to its RAM and are discarded,
and changes the host makes during a run may go unseen: exchange files through
FABRIC_LAB_SHARED (or --shared). Each VM has its own /proc, /sys, /dev and
/run. Frames never leave the lab: the NICs are taps on a bridge in a network
namespace private to the run.

Options:
  -n, --nodes N            number of VMs (default 1, at most $MAX_NODES)
  -t, --timeout SECS       bound on the whole run, boot included (default 300)
      --boot-timeout SECS  bound on booting until every node is ready
                           (default 120)
  -m, --mem MB             memory per VM in MiB (default 1024)
      --cpus N             vCPUs per VM (default: host CPUs / nodes, 1 to 4)
  -e, --env NAME[=VALUE]   pass an environment variable to COMMAND; without
                           a value, the host's value (repeatable)
      --shared DIR         use host directory DIR as FABRIC_LAB_SHARED; it is
                           kept after the run (default: a temporary directory)
      --check              only check the host requirements (exit 0 or 125)
  -v, --verbose            report progress and timings on stderr ("lab: ")
  -h, --help               show this help

Each node, once its RoCE v2 GID is configured and it reaches every peer, and
only when all nodes got there, runs COMMAND as root with stdin /dev/null,
an unlimited locked-memory limit, HOME=/tmp, the host's PATH and:
  FABRIC_LAB_NODE       this node's number, 1..N
  FABRIC_LAB_NODES      N
  FABRIC_LAB_ADDR       this node's IPv4 address, $SUBNET_PREFIX.(10+node)/$SUBNET_PREFIX_LEN
  FABRIC_LAB_ADDRS      all nodes' addresses, space-separated, in node order
  FABRIC_LAB_NETDEV     the virtio NIC that carries the address
  FABRIC_LAB_RDMA_DEV   the soft-RoCE device (rxe0)
  FABRIC_LAB_GID_INDEX  index of the RoCE v2 GID ::ffff:FABRIC_LAB_ADDR
  FABRIC_LAB_SHARED     directory shared read-write by all nodes and the host
                        (at the same path as on the host)
A node whose COMMAND finished stays up, reachable by its peers, until every
node's COMMAND finished.

Output: with one node, COMMAND's stdout and stderr go unchanged to stdout
and stderr. With more, every line is prefixed "nodeK| ".

Exit status:
  N = 1      COMMAND's exit status
  N > 1      the status of the first node, in node order, whose COMMAND
             failed; 0 when all succeeded
  1          usage error
  124        --timeout expired; all VMs were stopped
  125        lab failure: a host requirement is missing, a VM did not boot
             or crashed, or the nodes were not ready within --boot-timeout
  130, 143   interrupted by SIGINT, SIGTERM
(COMMAND's own statuses 1, 124 and 125 are passed through unchanged.)

Requirements: root, /dev/net/tun, qemu-system-x86_64, busybox-static,
iproute2, kmod, cpio, and a kernel /boot/vmlinuz-VER whose modules under
/lib/modules/VER include rdma_rxe (the newest such kernel is used).
scripts/setup.sh installs them on Debian.

Environment:
  FABRIC_LAB_CACHE   where the initramfs and the extracted kernel are cached
                     (default \${XDG_CACHE_HOME:-\$HOME/.cache}/fabrickit-lab)
  FABRIC_LAB_KEEP    if set, keep the run's work directory (VM console logs,
                     control files) for debugging
EOF
}

usage_error() {
    printf '%s: %s\n' "$PROG" "$1" >&2
    printf "Usage: %s [OPTIONS] [--] COMMAND [ARGS...]\nTry '%s --help' for more information.\n" "$PROG" "$PROG" >&2
    exit "$EXIT_USAGE"
}

now_ms() {
    local us=${EPOCHREALTIME//[.,]/}
    echo $((10#$us / 1000))
}

elapsed() { # seconds since start, one decimal
    local ms=$(($(now_ms) - START_MS))
    printf '%d.%ds' $((ms / 1000)) $((ms % 1000 / 100))
}

log() {
    if ((VERBOSE)); then printf 'lab: %s\n' "$*" >&2; fi
}

error() { printf 'lab: error: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- arguments

need_value() { # OPTION REMAINING-ARGC
    (($2 >= 2)) || usage_error "option $1 needs a value"
}

need_integer() { # OPTION VALUE MIN MAX
    if ! [[ $2 =~ ^[0-9]{1,9}$ ]] || ((10#$2 < $3 || 10#$2 > $4)); then
        usage_error "option $1 needs an integer from $3 to $4, not '$2'"
    fi
}

parse_args() {
    local opt val
    while (($#)); do
        opt=$1
        val=
        # Accept --opt=value as well as --opt value.
        if [[ $opt == --*=* ]]; then
            val=${opt#*=}
            opt=${opt%%=*}
            set -- "$opt" "$val" "${@:2}"
        fi
        case $opt in
            -h | --help) usage; exit 0 ;;
            -v | --verbose) VERBOSE=1; shift ;;
            --check) CHECK_ONLY=1; shift ;;
            -n | --nodes) need_value "$opt" $#; need_integer "$opt" "$2" 1 "$MAX_NODES"; NODES=$((10#$2)); shift 2 ;;
            -t | --timeout) need_value "$opt" $#; need_integer "$opt" "$2" 1 86400; TIMEOUT=$((10#$2)); shift 2 ;;
            --boot-timeout) need_value "$opt" $#; need_integer "$opt" "$2" 1 86400; BOOT_TIMEOUT=$((10#$2)); shift 2 ;;
            -m | --mem) need_value "$opt" $#; need_integer "$opt" "$2" 256 1048576; MEM_MB=$((10#$2)); shift 2 ;;
            --cpus) need_value "$opt" $#; need_integer "$opt" "$2" 1 64; CPUS=$((10#$2)); shift 2 ;;
            -e | --env)
                need_value "$opt" $#
                val=$2
                [[ $val =~ ^[A-Za-z_][A-Za-z0-9_]*(=|$) ]] || usage_error "option $opt needs NAME or NAME=VALUE, not '$val'"
                if [[ $val != *=* ]]; then
                    [[ -v $val ]] || usage_error "option $opt $val: $val is not set"
                    val="$val=${!val}"
                fi
                EXTRA_ENV+=("$val")
                shift 2
                ;;
            --shared)
                need_value "$opt" $#
                [[ -d $2 ]] || usage_error "option $opt: '$2' is not a directory"
                SHARED_DIR=$(cd "$2" && pwd)
                shift 2
                ;;
            --) shift; break ;;
            -?*) usage_error "unknown option '$opt'" ;;
            *) break ;;
        esac
    done
    COMMAND=("$@")
    if ((!CHECK_ONLY && ${#COMMAND[@]} == 0)); then
        usage_error "no COMMAND given"
    fi
    if [[ -z $CPUS ]]; then
        CPUS=$(($(nproc) / NODES))
        ((CPUS >= 1)) || CPUS=1
        ((CPUS <= 4)) || CPUS=4
    fi
    return 0
}

# ------------------------------------------------------------- requirements

# Sets KVER and KERNEL to the newest kernel whose modules include rdma_rxe.
select_kernel() {
    local image ver
    while read -r image; do
        ver=${image#/boot/vmlinuz-}
        [[ -r $image && -d /lib/modules/$ver ]] || continue
        if [[ -n $(find "/lib/modules/$ver" -name 'rdma_rxe.ko*' -print -quit 2>/dev/null) ]]; then
            KVER=$ver
            KERNEL=$image
            return 0
        fi
    done < <(printf '%s\n' /boot/vmlinuz-* | sort -rV)
    return 1
}

# Sets BUSYBOX to a statically linked busybox: the initramfs has no libc.
find_static_busybox() {
    local candidate
    for candidate in /bin/busybox /usr/bin/busybox "$(command -v busybox || true)"; do
        [[ -n $candidate && -x $candidate ]] || continue
        # ldd fails on static executables.
        if ! ldd "$candidate" >/dev/null 2>&1; then
            BUSYBOX=$candidate
            return 0
        fi
    done
    return 1
}

check_requirements() {
    local missing=() tool
    ((EUID == 0)) || missing+=("root privileges (for the network namespace and tap devices)")
    [[ -c /dev/net/tun ]] || missing+=("/dev/net/tun (TUN/TAP support)")
    for tool in qemu-system-x86_64:qemu-system-x86 ip:iproute2 rdma:iproute2 \
        modprobe:kmod cpio:cpio tail:coreutils sed:sed; do
        command -v "${tool%%:*}" >/dev/null ||
            missing+=("${tool%%:*} (Debian package ${tool#*:})")
    done
    find_static_busybox || missing+=("a statically linked busybox (Debian package busybox-static)")
    select_kernel || missing+=("a kernel /boot/vmlinuz-VER with rdma_rxe under /lib/modules/VER (Debian package linux-image-amd64)")
    if ((${#missing[@]})); then
        error "missing requirements (scripts/setup.sh installs them):"
        printf 'lab:   %s\n' "${missing[@]}" >&2
        exit "$EXIT_LAB_FAILURE"
    fi
}

# ---------------------------------------------------------------- initramfs

# Prints the module files needed by INITRAMFS_MODULES, in load order.
initramfs_module_files() {
    local mod line
    declare -A seen=()
    for mod in "${INITRAMFS_MODULES[@]}"; do
        modprobe -S "$KVER" --show-depends "$mod" 2>/dev/null || {
            error "kernel $KVER has no module $mod"
            return 1
        }
    done | while read -r line; do
        # "insmod FILE [params]" for modules, "builtin NAME" for built-ins.
        [[ $line == insmod\ * ]] || continue
        line=${line#insmod }
        line=${line%% *}
        [[ -v seen[$line] ]] && continue
        seen[$line]=1
        printf '%s\n' "$line"
    done
}

copy_module() { # SRC DEST: busybox insmod needs an uncompressed module
    case $1 in
        *.ko) cp "$1" "$2" ;;
        *.ko.xz) xz -dc "$1" >"$2" ;;
        *.ko.zst) zstd -qdc "$1" >"$2" ;;
        *.ko.gz) gzip -dc "$1" >"$2" ;;
        *) error "unknown module format: $1"; return 1 ;;
    esac
}

# Writes the uncompressed kernel (ELF vmlinux) inside bzImage IMAGE to OUT,
# like the kernel tree's scripts/extract-vmlinux: find the compressed
# payload by its magic number and decompress from there.
extract_vmlinux() { # IMAGE OUT
    local image=$1 out=$2 spec magic tool off
    for spec in '\xfd7zXZ\x00:xz' '\x28\xb5\x2f\xfd:zstd' '\x1f\x8b\x08:gzip'; do
        magic=${spec%%:*}
        tool=${spec#*:}
        command -v "$tool" >/dev/null || continue
        for off in $(LC_ALL=C grep -aboP "$magic" "$image" | cut -d: -f1 | head -n 4); do
            # Data after the payload makes the decompressor complain; the
            # ELF check below is what counts.
            tail -c +$((off + 1)) "$image" | "$tool" -dc 2>/dev/null >"$out" || true
            if [[ $(head -c 4 "$out" | od -An -tx1) == ' 7f 45 4c 46' ]]; then
                return 0
            fi
        done
    done
    return 1
}

# Sets BOOT_KERNEL to what QEMU boots. Booting the uncompressed kernel
# through its PVH entry point skips the firmware's real-mode setup and the
# in-guest decompression, which under TCG saves about 3 s per boot. That
# needs a kernel built with CONFIG_PVH; otherwise the bzImage is booted.
prepare_kernel() {
    BOOT_KERNEL=$KERNEL
    if ! grep -qx 'CONFIG_PVH=y' "/boot/config-$KVER" 2>/dev/null; then
        log "kernel: $KERNEL (no PVH entry point)"
        return 0
    fi
    local key tmp
    key=$(stat -L -c '%n %s %Y' "$KERNEL" | sha256sum)
    local vmlinux=$CACHE_DIR/vmlinux-$KVER-${key:0:16}
    if [[ ! -s $vmlinux ]]; then
        mkdir -p "$CACHE_DIR"
        tmp=$(mktemp "$CACHE_DIR/.vmlinux.XXXXXX")
        BUILD_TMP=$tmp
        if ! extract_vmlinux "$KERNEL" "$tmp"; then
            log "kernel: $KERNEL (cannot extract vmlinux)"
            return 0
        fi
        mv -f "$tmp" "$vmlinux"
        BUILD_TMP=
    fi
    BOOT_KERNEL=$vmlinux
    log "kernel: $vmlinux (PVH boot)"
}

# Sets INITRD to a cached initramfs for KVER, building it when needed. The
# cache key covers everything that goes in, so edits to scripts/lab/init or
# kernel updates produce a new image. Builds go to a temporary file that is
# renamed into place, so concurrent runs never see a partial image.
prepare_initramfs() {
    local cache=$CACHE_DIR modules key
    modules=$(initramfs_module_files) || finish "$EXIT_LAB_FAILURE"
    key=$({
        cat "$GUEST_DIR/init"
        stat -L -c '%n %s %Y' "$BUSYBOX"
        # shellcheck disable=SC2086 # one file per line, no spaces in module paths
        stat -L -c '%n %s %Y' $modules
    } | sha256sum)
    INITRD=$cache/initramfs-$KVER-${key:0:16}.cpio
    if [[ -s $INITRD ]]; then
        log "initramfs: $INITRD (cached)"
        return 0
    fi

    mkdir -p "$cache"
    local tmp root i=0 mod name
    tmp=$(mktemp -d "$cache/.build.XXXXXX")
    BUILD_TMP=$tmp
    root=$tmp/root
    mkdir -p "$root"/{bin,dev,proc,sys,lower,rw,newroot,modules}
    cp "$BUSYBOX" "$root/bin/busybox"
    install -m 0755 "$GUEST_DIR/init" "$root/init"
    # The kernel opens /dev/console for init before devtmpfs is mounted.
    mknod -m 0600 "$root/dev/console" c 5 1
    for mod in $modules; do
        i=$((i + 1))
        name=${mod##*/}
        name=${name%%.ko*}
        copy_module "$mod" "$root/modules/$(printf '%02d' "$i")-$name.ko" || finish "$EXIT_LAB_FAILURE"
    done
    (cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null --quiet -o -H newc) >"$tmp/initramfs.cpio"
    mv -f "$tmp/initramfs.cpio" "$INITRD"
    rm -rf "$tmp"
    BUILD_TMP=
    log "initramfs: $INITRD (built)"
}

# Removes cache entries other than the ones this run uses: older kernels,
# earlier versions of scripts/lab/init, builds that were interrupted. Only
# entries unused for an hour go, so concurrent runs keep theirs.
prune_cache() {
    touch -c "$INITRD"
    [[ $BOOT_KERNEL == "$CACHE_DIR"/* ]] && touch -c "$BOOT_KERNEL"
    find "$CACHE_DIR" -maxdepth 1 \( -name 'initramfs-*' -o -name 'vmlinux-*' \
        -o -name '.build.*' -o -name '.vmlinux.*' \) -mmin +60 \
        ! -path "$INITRD" ! -path "$BOOT_KERNEL" -exec rm -rf {} + 2>/dev/null || true
}

# ------------------------------------------------------------------- the lab

node_addr() { echo "$SUBNET_PREFIX.$((10 + $1))"; }
node_mac() { printf '52:54:00:77:%02x:%02x' $(($1 >> 8)) $(($1 & 255)); }

# QEMU option values escape ',' by doubling it.
qemu_escape() { printf '%s' "${1//,/,,}"; }

# True while process PID exists and is not a zombie (whose cmdline is empty).
process_alive() {
    local cmdline=
    cmdline=$(tr -d '\0' 2>/dev/null <"/proc/$1/cmdline") || true
    [[ -n $cmdline ]]
}

# A run killed with SIGKILL leaves its namespace and work directory behind
# (its VMs die with it, see set_orphan_guard). Both names carry the run's PID;
# remove those whose run is gone.
remove_stale_labs() {
    local ns dir
    while read -r ns _; do
        [[ $ns =~ ^fablab-([0-9]+)-[0-9a-f]{4}$ ]] || continue
        process_alive "${BASH_REMATCH[1]}" || ip netns del "$ns" 2>/dev/null || true
    done < <(ip netns list 2>/dev/null)
    for dir in "${TMPDIR:-/tmp}"/fablab-*-????.??????; do
        [[ -d $dir && ${dir##*/} =~ ^fablab-([0-9]+)-[0-9a-f]{4}\. ]] || continue
        process_alive "${BASH_REMATCH[1]}" || rm -rf "$dir"
    done
}

# Writes everything node-setup.sh needs into the control directory.
prepare_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$LAB_ID.XXXXXX")
    mkdir "$WORK/ctl"
    if [[ -z $SHARED_DIR ]]; then
        SHARED_DIR=$WORK/shared
        mkdir "$SHARED_DIR"
    fi
    install -m 0755 "$GUEST_DIR/node-setup.sh" "$WORK/ctl/node-setup.sh"

    # NUL-separated, so every argument arrives byte for byte.
    printf '%s\0' "${COMMAND[@]}" >"$WORK/ctl/argv"
    if ((${#EXTRA_ENV[@]})); then printf '%s\0' "${EXTRA_ENV[@]}"; fi >"$WORK/ctl/env"

    local k
    LAB_ADDRS=() LAB_MACS=()
    for ((k = 1; k <= NODES; k++)); do
        LAB_ADDRS+=("$(node_addr "$k")")
        LAB_MACS+=("$(node_mac "$k")")
        : >"$WORK/ctl/node$k.out"
        : >"$WORK/ctl/node$k.err"
    done
    # Variables for node-setup.sh, which sources this file.
    local LAB_NODES=$NODES LAB_PREFIX_LEN=$SUBNET_PREFIX_LEN LAB_CWD=$PWD \
        LAB_PATH=$CALLER_PATH LAB_SHARED=$SHARED_DIR LAB_READY_TIMEOUT=$BOOT_TIMEOUT \
        LAB_BUSYBOX=$BUSYBOX
    declare -p LAB_NODES LAB_PREFIX_LEN LAB_CWD LAB_PATH LAB_SHARED \
        LAB_READY_TIMEOUT LAB_BUSYBOX LAB_ADDRS LAB_MACS >"$WORK/ctl/lab.env"
}

# The lab's L2 segment: a bridge with one tap per VM, inside a namespace of
# its own with no other interface and no route out.
create_network() {
    ip netns add "$LAB_ID"
    NETNS_CREATED=1
    ip -n "$LAB_ID" link add br0 type bridge
    ip -n "$LAB_ID" link set br0 up
    local k
    for ((k = 1; k <= NODES; k++)); do
        ip -n "$LAB_ID" tuntap add dev "tap$k" mode tap
        ip -n "$LAB_ID" link set "tap$k" master br0 up
    done
}

# If lab.sh is killed outright (SIGKILL), no trap runs. Every long-lived
# child is therefore started under ORPHAN_GUARD, which makes the kernel kill
# it when lab.sh dies.
set_orphan_guard() {
    ORPHAN_GUARD=()
    if setpriv --help 2>/dev/null | grep -q -- --pdeathsig; then
        ORPHAN_GUARD=(setpriv --pdeathsig KILL)
    fi
}

start_vms() {
    local k ctl shared
    ctl=$(qemu_escape "$WORK/ctl")
    shared=$(qemu_escape "$SHARED_DIR")
    for ((k = 1; k <= NODES; k++)); do
        ip netns exec "$LAB_ID" "${ORPHAN_GUARD[@]}" qemu-system-x86_64 \
            -name "$LAB_ID-node$k" \
            -machine pc -accel tcg -cpu max -smp "$CPUS" -m "$MEM_MB" \
            -nodefaults -no-user-config -display none -no-reboot \
            -kernel "$BOOT_KERNEL" -initrd "$INITRD" \
            -append "console=ttyS0 quiet panic=-1 fablab.node=$k" \
            -chardev "file,id=console,path=$(qemu_escape "$WORK/node$k.console")" \
            -serial chardev:console \
            -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
            -virtfs "local,path=$ctl,mount_tag=ctl,security_model=none,multidevs=remap" \
            -virtfs "local,path=$shared,mount_tag=shared,security_model=none,multidevs=remap" \
            -netdev "tap,id=lan,ifname=tap$k,script=no,downscript=no" \
            -device "virtio-net-pci,netdev=lan,mac=$(node_mac "$k")" \
            </dev/null >"$WORK/node$k.qemu.log" 2>&1 &
        QEMU_PIDS[k]=$!
        QEMU_STARTS[k]=$(process_state "${QEMU_PIDS[k]}" | cut -d' ' -f2) || true
    done
}

# Copies each node's output files to our stdout/stderr as they grow; each
# tail exits after its VM is gone and the file is drained. With several
# nodes, lines are prefixed (node-setup.sh completes an unterminated last
# line, so that it cannot run into another node's output).
stream_output() {
    local k
    local -a follow prefix
    for ((k = 1; k <= NODES; k++)); do
        follow=("${ORPHAN_GUARD[@]}" tail -n +1 -s 0.1 --pid="${QEMU_PIDS[k]}" -f)
        prefix=("${ORPHAN_GUARD[@]}" sed -u "s/^/node$k| /")
        if ((NODES == 1)); then
            "${follow[@]}" "$WORK/ctl/node$k.out" &
            STREAM_PIDS+=($!)
            "${follow[@]}" "$WORK/ctl/node$k.err" >&2 &
            STREAM_PIDS+=($!)
        else
            "${follow[@]}" "$WORK/ctl/node$k.out" | "${prefix[@]}" &
            STREAM_PIDS+=($!)
            "${follow[@]}" "$WORK/ctl/node$k.err" | "${prefix[@]}" >&2 &
            STREAM_PIDS+=($!)
        fi
    done
}

# Prints the state letter and start time of process PID; fails if it is gone.
# The start time tells a process from a later one that reuses its PID.
process_state() { # PID
    local stat fields
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    # The fields after "PID (COMM) ", COMM may contain spaces and parentheses.
    read -r -a fields <<<"${stat##*) }"
    echo "${fields[0]} ${fields[19]}"
}

# True while node K's QEMU runs (not exited, not a zombie).
vm_running() {
    local pid=${QEMU_PIDS[$1]:-} state start
    [[ -n $pid ]] || return 1
    read -r state start < <(process_state "$pid" || true) || return 1
    [[ $state != [ZX] && $start == "${QEMU_STARTS[$1]:-}" ]]
}

show_vm_logs() { # K
    local k=$1 qemu_log=$WORK/node$1.qemu.log console=$WORK/node$1.console oops
    if [[ -s $qemu_log ]]; then
        printf 'lab: QEMU messages of node%d:\n' "$k" >&2
        tail -n 20 "$qemu_log" | sed 's/^/lab:   | /' >&2
    fi
    if [[ -s $console ]]; then
        # A kernel crash's headline may have scrolled out of the tail below.
        oops=$(grep -m 1 -E 'Kernel panic|BUG:|Oops|general protection fault' "$console" || true)
        if [[ -n $oops ]]; then
            printf 'lab: node%d kernel crashed: %s\n' "$k" "$oops" >&2
        fi
        printf 'lab: last lines of the console of node%d:\n' "$k" >&2
        tail -n 40 "$console" | sed 's/^/lab:   | /' >&2
    fi
}

lab_failure() { # K MESSAGE
    error "$2"
    show_vm_logs "$1"
    finish "$EXIT_LAB_FAILURE"
}

# A node that reported an error, or whose VM ended without a command status,
# fails the whole lab.
check_node_health() { # K
    local k=$1
    if [[ -e $WORK/ctl/node$k.error ]]; then
        lab_failure "$k" "node$k: $(<"$WORK/ctl/node$k.error")"
    fi
    if ! vm_running "$k" && [[ ! -e $WORK/ctl/node$k.rc ]]; then
        wait "${QEMU_PIDS[k]}" 2>/dev/null || true
        if [[ -e $WORK/ctl/node$k.booted ]]; then
            lab_failure "$k" "node$k: the VM stopped unexpectedly"
        fi
        lab_failure "$k" "node$k: the VM stopped before reaching node setup"
    fi
}

deadline_reached() { (($(now_ms) >= START_MS + TIMEOUT * 1000)); }

on_timeout() {
    local k waiting=()
    for ((k = 1; k <= NODES; k++)); do
        [[ -e $WORK/ctl/node$k.rc ]] || waiting+=("node$k")
    done
    error "timed out after ${TIMEOUT}s (still running: ${waiting[*]}); stopping all VMs"
    finish "$EXIT_TIMEOUT"
}

# Waits until every node is ready, then opens the barrier.
wait_until_ready() {
    local boot_deadline=$((START_MS + BOOT_TIMEOUT * 1000)) k all
    local -A booted=() ready=()
    while :; do
        all=1
        for ((k = 1; k <= NODES; k++)); do
            [[ -v ready[$k] ]] && continue
            check_node_health "$k"
            if [[ ! -v booted[$k] && -e $WORK/ctl/node$k.booted ]]; then
                booted[$k]=1
                log "node$k: kernel up, setting up the node ($(elapsed))"
            fi
            if [[ -e $WORK/ctl/node$k.ready ]]; then
                ready[$k]=1
                log "node$k: ready, $(node_addr "$k") on rxe0 GID index $(<"$WORK/ctl/node$k.ready") ($(elapsed))"
            else
                all=0
            fi
        done
        ((all)) && break
        deadline_reached && on_timeout
        if (($(now_ms) >= boot_deadline)); then
            for ((k = 1; k <= NODES; k++)); do
                [[ -v ready[$k] ]] || lab_failure "$k" "node$k: not ready within ${BOOT_TIMEOUT}s"
            done
        fi
        sleep 0.1
    done
    : >"$WORK/ctl/go"
    log "all $NODES node(s) ready, running the command ($(elapsed))"
}

# Waits until every node has run the command, then lets the VMs power off.
# A node that finishes early stays up until all have finished, so that its
# peers can still reach it, as on a real cluster.
wait_until_done() {
    local k finished=0 running halted=0
    local -A reported=()
    while :; do
        running=0
        for ((k = 1; k <= NODES; k++)); do
            check_node_health "$k"
            if [[ ! -v reported[$k] && -e $WORK/ctl/node$k.rc ]]; then
                reported[$k]=1
                finished=$((finished + 1))
                log "node$k: command exited with status $(<"$WORK/ctl/node$k.rc") ($(elapsed))"
            fi
            if vm_running "$k"; then
                running=1
            else
                wait "${QEMU_PIDS[k]}" 2>/dev/null || true
            fi
        done
        if ((!running)); then
            # A VM can stop between its health check above and the
            # vm_running test: look again, now that all have stopped, so
            # that a node that died without a status is never read as one.
            for ((k = 1; k <= NODES; k++)); do
                check_node_health "$k"
            done
            break
        fi
        if ((finished == NODES && !halted)); then
            : >"$WORK/ctl/halt"
            halted=1
        fi
        deadline_reached && on_timeout
        sleep 0.1
    done
}

# The status lab.sh exits with when every command ran.
command_status() {
    local k rc
    for ((k = 1; k <= NODES; k++)); do
        rc=$(<"$WORK/ctl/node$k.rc")
        if ((rc != 0)); then
            echo "$rc"
            return
        fi
    done
    echo 0
}

# shellcheck disable=SC2317 # reached from the EXIT trap
stop_vms() {
    local k pid tries
    for ((k = 1; k <= NODES; k++)); do
        vm_running "$k" && kill -TERM "${QEMU_PIDS[k]}" 2>/dev/null
    done
    for ((tries = 0; tries < 50; tries++)); do
        for ((k = 1; k <= NODES; k++)); do
            vm_running "$k" && break
        done
        ((k > NODES)) && break
        sleep 0.1
    done
    for ((k = 1; k <= NODES; k++)); do
        vm_running "$k" && kill -KILL "${QEMU_PIDS[k]}" 2>/dev/null
    done
    for pid in "${QEMU_PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
}

# Every deliberate exit once the lab exists goes through here; any other
# exit is an unexpected failure of lab.sh itself (see cleanup).
finish() { # STATUS
    EXIT_DELIBERATE=1
    exit "$1"
}

# Runs on every exit path: normal, error, timeout and signals.
# shellcheck disable=SC2317 # reached from the EXIT trap
cleanup() {
    local status=$?
    set +e
    trap - ERR
    trap '' INT TERM
    if ((!EXIT_DELIBERATE)); then
        error "unexpected failure (status $status) at ${FAILED_AT:-an unknown place}"
        status=$EXIT_LAB_FAILURE
    fi
    stop_vms
    # Output streams end once their VM is gone; do not hang on a stuck one.
    local tries pid alive
    for ((tries = 0; tries < 30; tries++)); do
        alive=0
        for pid in "${STREAM_PIDS[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        ((alive)) || break
        sleep 0.1
    done
    for pid in "${STREAM_PIDS[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    ((NETNS_CREATED)) && ip netns del "$LAB_ID" 2>/dev/null
    [[ -n $BUILD_TMP ]] && rm -rf "$BUILD_TMP"
    if [[ -n $WORK && -n ${FABRIC_LAB_KEEP:-} ]]; then
        printf 'lab: kept the work directory %s\n' "$WORK" >&2
    elif [[ -n $WORK ]]; then
        rm -rf "$WORK"
    fi
    log "done, exit status $status ($(elapsed))"
    exit "$status"
}

main() {
    parse_args "$@"
    START_MS=$(now_ms)
    check_requirements
    if ((CHECK_ONLY)); then
        log "requirements met: kernel $KVER, busybox $BUSYBOX"
        exit 0
    fi
    trap cleanup EXIT
    trap 'log "interrupted (SIGINT)"; finish 130' INT
    trap 'log "terminated (SIGTERM)"; finish 143' TERM

    log "$NODES node(s), $CPUS vCPU(s) and ${MEM_MB} MiB each, kernel $KVER"
    CACHE_DIR=${FABRIC_LAB_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/fabrickit-lab}
    prepare_kernel
    prepare_initramfs
    prune_cache
    set_orphan_guard
    remove_stale_labs
    prepare_workdir
    create_network
    start_vms
    stream_output
    log "started $NODES VM(s) in network namespace $LAB_ID ($(elapsed))"
    wait_until_ready
    wait_until_done
    finish "$(command_status)"
}

main "$@"
