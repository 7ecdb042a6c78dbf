#!/usr/bin/env bash
# End-to-end test of scripts/lab.sh, the soft-RoCE VM lab.
#
# Boots a few small labs and checks what a user would notice: output and
# exit status pass through unchanged, arguments and the working directory
# survive, every node has a working rxe0 with the expected RoCE v2 GID, nodes
# reach each other (over ICMP and RDMA), multi-node output is prefixed, and
# nothing (QEMU, network namespace, temporary files) is left behind after a
# normal exit, a lab failure (boot timeout, guest crash), a timeout or SIGTERM.
#
# Exit status: 0 all checks passed, 1 some check failed, 77 skipped because
# the host cannot run the lab (not root, no QEMU, ...; see `lab.sh --check`).
# Set FABRIC_LAB_TEST_REQUIRE=1 to turn that skip into a failure.
# Takes about a minute on a 2-core machine.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAB=$REPO/scripts/lab.sh

FAILURES=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; FAILURES=$((FAILURES + 1)); }

# check DESCRIPTION COMMAND...: runs COMMAND, reports DESCRIPTION.
check() {
    if "${@:2}"; then pass "$1"; else fail "$1"; fi
}

# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
    if [[ $2 == "$3" ]]; then
        pass "$1"
    else
        fail "$1"
        printf '     expected: %q\n     actual:   %q\n' "$2" "$3"
    fi
}

contains_line() { grep -qxF -- "$2" <<<"$1"; }
matches_line() { grep -qxE -- "$2" <<<"$1"; }
count_lines() { grep -cE -- "$2" <<<"$1" || true; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/lab_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# run_lab ARGS...: runs lab.sh in the background (so its PID is known),
# waits, and sets RC, OUT, ERR, LAB_PID and SECS.
run_lab() {
    local start=$SECONDS
    "$LAB" "$@" >"$TMP/out" 2>"$TMP/err" &
    LAB_PID=$!
    RC=0
    wait "$LAB_PID" || RC=$?
    SECS=$((SECONDS - start))
    OUT=$(<"$TMP/out")
    ERR=$(<"$TMP/err")
}

# Processes whose command line mentions the run's ID (fablab-<PID>-): its
# QEMUs (-name) and its output streams (work directory paths).
lab_processes() { # LAB_PID
    local proc
    local -a argv
    for proc in /proc/[0-9]*; do
        mapfile -d '' argv 2>/dev/null <"$proc/cmdline" || continue
        [[ "${argv[*]}" == *"fablab-$1-"* ]] && echo "${proc#/proc/}"
    done
    return 0
}

check_nothing_left() { # LAB_PID
    local what=()
    [[ -n $(lab_processes "$1") ]] && what+=("processes: $(lab_processes "$1" | tr '\n' ' ')")
    ip netns list | grep -q "^fablab-$1-" && what+=("network namespace")
    compgen -G "${TMPDIR:-/tmp}/fablab-$1-*" >/dev/null && what+=("work directory")
    if ((${#what[@]})); then
        fail "nothing left behind (${what[*]})"
    else
        pass "nothing left behind: no QEMU or other process, netns or work directory"
    fi
}

show_output_on_failure() {
    local before=$1
    if ((FAILURES > before)); then
        printf -- '---- stdout\n%s\n---- stderr\n%s\n----\n' "$OUT" "$ERR"
    fi
}

# ------------------------------------------------------------ requirements

if ! "$LAB" --check 2>"$TMP/check"; then
    cat "$TMP/check"
    if [[ ${FABRIC_LAB_TEST_REQUIRE:-0} == 1 ]]; then
        echo "FAIL lab requirements missing"
        exit 1
    fi
    echo "SKIP lab requirements missing"
    exit 77
fi

# ------------------------------------------------------------ command line

usage_on_stderr_only() { grep -q '^Usage: lab.sh' "$TMP/err" && [[ ! -s $TMP/out ]]; }

echo "# command line"
RC=0
"$LAB" --help >"$TMP/out" 2>"$TMP/err" || RC=$?
check_eq "--help exits 0" 0 "$RC"
check "--help prints usage on stdout" grep -q '^Usage: lab.sh' "$TMP/out"
check "--help documents the exit statuses" grep -q '125 *lab failure' "$TMP/out"
for bad in "--nodes 0 -- true" "--bogus -- true" "--timeout" "--nodes 2"; do
    RC=0
    # shellcheck disable=SC2086 # split on purpose
    "$LAB" $bad >"$TMP/out" 2>"$TMP/err" || RC=$?
    check_eq "'lab.sh $bad' is a usage error (exit 1)" 1 "$RC"
    check "'lab.sh $bad' prints usage on stderr only" usage_on_stderr_only
done

# ----------------------------------------------------------- a single node

echo "# one node: output, exit status, arguments, working directory, rxe0"
CWD="$TMP/work dir"
mkdir -p "$CWD"
cat >"$CWD/one.sh" <<'EOF'
echo out
echo err >&2
printf '<%s>\n' "$@"
echo "cwd=$PWD"
echo "node=$FABRIC_LAB_NODE/$FABRIC_LAB_NODES addr=$FABRIC_LAB_ADDR addrs=$FABRIC_LAB_ADDRS dev=$FABRIC_LAB_RDMA_DEV"
port=/sys/class/infiniband/$FABRIC_LAB_RDMA_DEV/ports/1
echo "netdev=$(cat "/sys/class/infiniband/$FABRIC_LAB_RDMA_DEV/ports/1/gid_attrs/ndevs/1")/$FABRIC_LAB_NETDEV"
echo "gid1=$(cat "$port/gids/1")"
echo "type1=$(cat "$port/gid_attrs/types/1")"
echo "state=$(cat "$port/state")"
echo "memlock=$(ulimit -l)"
exit 7
EOF
# shellcheck disable=SC2016 # a literal $HOME must arrive unexpanded
ARGS=('a b' "it's" '"quoted"' '' '$HOME *' $'two\nlines')
before=$FAILURES
cd "$CWD" # all lab runs start here
run_lab -- sh -c '. ./one.sh' sh "${ARGS[@]}"
echo "  (boot + command + power-off: ${SECS}s)"
check_eq "exit status is the command's (7)" 7 "$RC"
check_eq "stderr is exactly the command's stderr" "err" "$ERR"
check_eq "stdout starts with the command's first line" "out" "$(head -n 1 <<<"$OUT")"
expected_args=$(printf '<%s>\n' "${ARGS[@]}")
check_eq "arguments with spaces, quotes, newlines and empty ones survive" \
    "$expected_args" "$(sed -n '2,8p' <<<"$OUT")"
check "working directory is preserved" contains_line "$OUT" "cwd=$CWD"
check "FABRIC_LAB_* describe the node" \
    matches_line "$OUT" 'node=1/1 addr=([0-9]+\.){3}[0-9]+ addrs=([0-9]+\.){3}[0-9]+ dev=rxe0'
addr=$(sed -n 's/^node=1\/1 addr=\([0-9.]*\) .*/\1/p' <<<"$OUT")
if [[ -n $addr ]]; then
    IFS=. read -r a b c d <<<"$addr"
    want_gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
    check "GID index 1 is ::ffff:$addr" contains_line "$OUT" "gid1=$want_gid"
else
    fail "GID index 1 is ::ffff:FABRIC_LAB_ADDR (no address printed)"
fi
check "GID index 1 is RoCE v2" contains_line "$OUT" "type1=RoCE v2"
check "rxe0 sits on FABRIC_LAB_NETDEV" matches_line "$OUT" 'netdev=([^/]+)/\1'
check "rxe0 port is ACTIVE" contains_line "$OUT" "state=4: ACTIVE"
check "locked memory is unlimited" contains_line "$OUT" "memlock=unlimited"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

# -------------------------------------------------------------- two nodes

echo "# two nodes: ping, RDMA write, prefixed output, node 2's failure"
cat >"$CWD/two.sh" <<'EOF'
for addr in $FABRIC_LAB_ADDRS; do
    [ "$addr" = "$FABRIC_LAB_ADDR" ] && continue
    if busybox ping -c1 -W5 "$addr" >/dev/null; then echo "ping $addr ok"; else echo "ping $addr failed"; fi
done
echo "to stderr" >&2
echo "node $FABRIC_LAB_NODE" >"$FABRIC_LAB_SHARED/hello.$FABRIC_LAB_NODE"

# RDMA write over the soft-RoCE fabric: node 1 serves, node 2 connects (and
# retries until the server listens).
set -- $FABRIC_LAB_ADDRS
bw() { timeout 60 ib_write_bw -d "$FABRIC_LAB_RDMA_DEV" -x "$FABRIC_LAB_GID_INDEX" -s 4096 -n 100 -F "$@" >/tmp/bw.log 2>&1; }
if [ "$FABRIC_LAB_NODE" = 1 ]; then
    bw && echo "rdma ok" || { echo "rdma failed"; cat /tmp/bw.log; }
else
    tries=0
    until bw "$1"; do
        tries=$((tries + 1))
        [ $tries -lt 40 ] || { echo "rdma failed"; cat /tmp/bw.log; break; }
        sleep 0.25
    done
    [ $tries -lt 40 ] && echo "rdma ok"
fi
[ "$FABRIC_LAB_NODE" = 2 ] && exit 3
exit 0
EOF
SHARED=$TMP/shared
mkdir "$SHARED"
before=$FAILURES
run_lab --nodes 2 --shared "$SHARED" -- sh ./two.sh
echo "  (boot + command + power-off: ${SECS}s)"
check_eq "exit status is node 2's (3), node 1 succeeded" 3 "$RC"
check "node 1 pings node 2" matches_line "$OUT" 'node1\| ping [0-9.]+ ok'
check "node 2 pings node 1" matches_line "$OUT" 'node2\| ping [0-9.]+ ok'
rdma_ok() { contains_line "$OUT" "node1| rdma ok" && contains_line "$OUT" "node2| rdma ok"; }
check "RDMA write from node 2 to node 1 works" rdma_ok
check_eq "every stdout line is prefixed nodeK| " 0 "$(grep -cvE '^node[12]\| ' <<<"$OUT" || true)"
check_eq "stderr is the nodes' stderr, prefixed" \
    $'node1| to stderr\nnode2| to stderr' "$(sort <<<"$ERR")"
check_eq "FABRIC_LAB_SHARED is shared with the host (--shared)" \
    $'node 1\nnode 2' "$(cat "$SHARED/hello.1" "$SHARED/hello.2" 2>/dev/null || true)"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

# ------------------------------------------------------------ three nodes

echo "# three nodes: all pairs reach each other, first failing node's status"
cat >"$CWD/three.sh" <<'EOF'
for addr in $FABRIC_LAB_ADDRS; do
    [ "$addr" = "$FABRIC_LAB_ADDR" ] && continue
    busybox ping -c1 -W5 "$addr" >/dev/null && echo "reached $addr"
done
case $FABRIC_LAB_NODE in 2) exit 5 ;; 3) exit 6 ;; esac
EOF
before=$FAILURES
run_lab -n 3 -- sh three.sh
echo "  (boot + command + power-off: ${SECS}s)"
check_eq "exit status is the first failing node's (node 2: 5)" 5 "$RC"
check_eq "each node reaches both others (6 pings)" 6 "$(count_lines "$OUT" '^node[123]\| reached ')"
check_eq "addresses are distinct" 3 "$(sed -n 's/^node[123]| reached //p' <<<"$OUT" | sort -u | wc -l)"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

# ---------------------------------------------------------------- timeout

echo "# --timeout stops a command that never ends"
before=$FAILURES
run_lab --timeout 30 -- sh -c 'echo started; exec sleep 100000'
echo "  (${SECS}s)"
check_eq "exit status is 124" 124 "$RC"
check "output produced before the timeout is shown" contains_line "$OUT" "started"
check "the timeout is reported on stderr" grep -q 'timed out' <<<"$ERR"
check "it stops within a few seconds of the timeout" test "$SECS" -le 40
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

# ----------------------------------------------------------- lab failures

echo "# lab failures: exit 125 with a clear message"
before=$FAILURES
run_lab --boot-timeout 1 -- true
check_eq "a boot timeout exits 125" 125 "$RC"
check "it says which node was not ready" grep -q '^lab: error: node1: not ready within 1s' <<<"$ERR"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

before=$FAILURES
run_lab --verbose -- sh -c 'echo crashing; echo c >/proc/sysrq-trigger'
echo "  (${SECS}s)"
check_eq "a guest kernel crash exits 125" 125 "$RC"
check "it is reported as an error" grep -q '^lab: error: node1: the VM stopped unexpectedly' <<<"$ERR"
check "the console log tail shows the panic" grep -q '^lab: .*Kernel panic' <<<"$ERR"
check_eq "with --verbose, lab messages go to stderr, prefixed 'lab: '" 0 "$(grep -cv '^lab: ' <<<"$ERR" || true)"
check_eq "stdout has the command's output only" "crashing" "$OUT"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

# ---------------------------------------------------------------- SIGTERM

echo "# SIGTERM stops the lab and cleans up (and output streams while it runs)"
before=$FAILURES
"$LAB" -n 2 -- sh -c 'echo started; exec sleep 100000' >"$TMP/out" 2>"$TMP/err" &
LAB_PID=$!
for ((i = 0; i < 600; i++)); do
    [[ $(grep -c started "$TMP/out") == 2 ]] && break
    sleep 0.1
done
check "output arrives while the command still runs" test "$(grep -c started "$TMP/out")" = 2
kill -TERM "$LAB_PID"
RC=0
wait "$LAB_PID" || RC=$?
OUT=$(<"$TMP/out") ERR=$(<"$TMP/err")
check_eq "exit status is 143" 143 "$RC"
check_nothing_left "$LAB_PID"
show_output_on_failure "$before"

echo
if ((FAILURES)); then
    echo "FAILED: $FAILURES check(s)"
    exit 1
fi
echo "PASSED"
