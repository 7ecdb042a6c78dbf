#!/usr/bin/env bash
# The demo's waits between nodes (scripts/lab/demo-lib.sh), which decide whether node 1
# runs the all-reduce across the nodes or on its own: another node's "ready" ends the wait
# with 0, its "failed" with 1 and its reason, and neither within the bound with 2; a node
# that is slow to answer is waited for, not given up on.
#   node_waits_test.sh REPO
set -euo pipefail
repo=${1:?usage: node_waits_test.sh REPO}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export DEMO_STEPS=$work DEMO_WHERE=node1
# shellcheck source=scripts/lab/demo-lib.sh
source "$repo/scripts/lab/demo-lib.sh"

outcome() { # READY FAILED SECONDS: wait_for_outcome's status, its stderr in $work/err
  local rc=0
  wait_for_outcome "$@" 2>"$work/err" || rc=$?
  echo "$rc"
}

touch "$work/ready"
[[ $(outcome "$work/ready" "$work/failed" 5) == 0 ]] || fail "a ready node was not seen"

echo "node 2 could not start its sshd (exit 1)" >"$work/failed"
[[ $(outcome "$work/absent" "$work/failed" 5) == 1 ]] || fail "a failed node was not seen"
grep -q "could not start its sshd" "$work/err" || fail "the failed node's reason was not passed on"

# Ready wins over failed: a node that retried and came up is used.
[[ $(outcome "$work/ready" "$work/failed" 5) == 0 ]] || fail "ready and failed together is not ready"

start=$SECONDS
[[ $(outcome "$work/absent" "$work/also-absent" 1) == 2 ]] || fail "a silent node did not time out"
((SECONDS - start < 30)) || fail "the bound of 1 s was not kept"
grep -q "gave up waiting for $work/absent after 1 s" "$work/err" || fail "the give-up says nothing"

# The word arrives while node 1 waits, as it does when node 2 works through its probes
# first: the wait is still on a while node 2 is slow (the one second stands for its probes)
# and ends with the word.
rm -f "$work/ready"
wait_for_outcome "$work/ready" "$work/absent" 60 2>"$work/err" &
waiter=$!
sleep 1
kill -0 "$waiter" 2>/dev/null || fail "the wait ended before the other node said anything"
touch "$work/ready"
rc=0
wait "$waiter" || rc=$?
((rc == 0)) || fail "a word that came later ended the wait with $rc"
echo "PASS: the demo's node waits end on ready, on failed with its reason, and at the bound"
