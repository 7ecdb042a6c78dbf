# demo-lib.sh - the demo's step recorder, sourced by scripts/demo.sh on the host and by
# scripts/lab/demo-node.sh inside the lab. Each step runs one command, shows a progress
# line, keeps the command's output in a log, and leaves a record the report is built from:
#
#   $DEMO_STEPS/steps/<where>-<seq>-<id>.json
#     {"where": "node2", "seq": 7, "id": "rdma_bw", "title": "...", "verdict": "pass",
#      "exit": 0, "seconds": 3.2, "log": "logs/node2-07-rdma_bw.log", "json": "json/...",
#      "note": "..."}
# (paths in a record are relative to $DEMO_STEPS, where report.html is written).
#
# Verdicts: pass (exit 0), expected (an exit the step declares as the honest outcome on
# this fabric, e.g. "no DCB support" on a virtual NIC), fail (anything else). A failed
# step does not stop the caller; demo_failures counts them.
#
# The caller sets DEMO_STEPS (a folder it can write; records go to its steps/, logs to its
# logs/) and DEMO_WHERE (host, node1, ...).

DEMO_SEQ=${DEMO_SEQ:-0}
demo_failures=0

demo_now() { date +%s.%N; }

# demo_elapsed START: seconds since START with one decimal.
demo_elapsed() { awk -v s="$1" -v e="$(demo_now)" 'BEGIN { printf "%.1f", e - s }'; }

# step ID TITLE [--expect CODE:NOTE]... [--json FILE] [--writes FILE] [--live] -- COMMAND...
#   --expect CODE:NOTE  exit CODE is this fabric's honest outcome, explained by NOTE
#   --json FILE         COMMAND's stdout is JSON: keep it as FILE (relative to the report)
#   --writes FILE       COMMAND writes the JSON FILE itself (relative to the report): link it
#   --live              show COMMAND's output as it comes, besides keeping it
step() {
  local id=$1 title=$2
  shift 2
  local -A expected=()
  local json= writes= live=0
  while [[ $1 != -- ]]; do
    case $1 in
      --expect) expected[${2%%:*}]=${2#*:}; shift 2 ;;
      --json) json=$2; shift 2 ;;
      --writes) writes=$2; shift 2 ;;
      --live) live=1; shift ;;
      *) echo "step: unknown option $1" >&2; return 2 ;;
    esac
  done
  shift
  DEMO_SEQ=$((DEMO_SEQ + 1))
  local name
  name=$(printf '%s-%02d-%s' "$DEMO_WHERE" "$DEMO_SEQ" "$id")
  local log=logs/$name.log
  mkdir -p "$DEMO_STEPS/logs" "$DEMO_STEPS/json" "$DEMO_STEPS/steps"
  printf '[%s] %s ...\n' "$DEMO_WHERE" "$title"
  local start rc=0
  start=$(demo_now)
  if ((live)); then
    "$@" 2>&1 | tee "$DEMO_STEPS/$log"
    rc=${PIPESTATUS[0]}
  elif [[ -n $json ]]; then
    "$@" >"$DEMO_STEPS/$json" 2>"$DEMO_STEPS/$log" || rc=$?
    # The log shows the JSON too, so that a reader of the log sees everything.
    cat "$DEMO_STEPS/$json" >>"$DEMO_STEPS/$log"
  else
    "$@" >"$DEMO_STEPS/$log" 2>&1 || rc=$?
  fi
  local seconds verdict note=
  seconds=$(demo_elapsed "$start")
  if ((rc == 0)); then
    verdict=pass
  elif [[ -n ${expected[$rc]+set} ]]; then
    verdict=expected note=${expected[$rc]}
  else
    verdict=fail
    demo_failures=$((demo_failures + 1))
  fi
  jq -n --arg where "$DEMO_WHERE" --argjson seq "$DEMO_SEQ" --arg id "$id" --arg title "$title" \
    --arg verdict "$verdict" --argjson exit "$rc" --argjson seconds "$seconds" \
    --arg log "$log" --arg json "${json:-$writes}" --arg note "$note" \
    '{where: $where, seq: $seq, id: $id, title: $title, verdict: $verdict, exit: $exit,
      seconds: $seconds, log: $log, json: (if $json == "" then null else $json end),
      note: (if $note == "" then null else $note end)}' >"$DEMO_STEPS/steps/$name.json.tmp"
  mv "$DEMO_STEPS/steps/$name.json.tmp" "$DEMO_STEPS/steps/$name.json"
  local mark
  case $verdict in pass) mark=ok ;; expected) mark="ok (expected: $note)" ;; *) mark="FAILED (exit $rc)" ;; esac
  printf '[%s] %s: %s in %ss\n' "$DEMO_WHERE" "$title" "$mark" "$seconds"
  if [[ $verdict == fail ]]; then
    # The tail of what went wrong, where the user is looking.
    tail -n 15 "$DEMO_STEPS/$log" | sed 's/^/    | /'
  fi
  return 0
}

# wait_for_outcome SUCCESS FAILURE SECONDS: until another node writes SUCCESS (status 0)
# or FAILURE (status 1), bounded (status 2). The bound is a lab that hangs, not a slow one:
# a node still working through earlier steps has not failed yet.
wait_for_outcome() {
  local deadline=$((SECONDS + $3))
  while [[ ! -e $1 ]]; do
    if [[ -n $2 && -e $2 ]]; then
      echo "$2: $(cat "$2")" >&2
      return 1
    fi
    if ((SECONDS >= deadline)); then
      echo "gave up waiting for $1 after $3 s" >&2
      return 2
    fi
    sleep 0.2
  done
}

# wait_for FILE [SECONDS]: until FILE exists (another node writes it), bounded.
wait_for() { wait_for_outcome "$1" "" "${2:-120}"; }
