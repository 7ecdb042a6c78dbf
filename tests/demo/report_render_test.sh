#!/usr/bin/env bash
# The demo's report as a person sees it: steps recorded by scripts/lab/demo-lib.sh, the
# page written by scripts/lab/demo-report.sh, opened from disk in headless Chromium.
# Checks that the browser decoded every figure, laid out one verdict per step, kept a
# hostile step title as text, and took a non-empty screenshot; then that a figure which
# cannot decode is seen as such (so the check itself can fail).
#   report_render_test.sh REPO [REPORT_DIR]
# With REPORT_DIR (a real demo's output), only the browser checks run on it.
set -euo pipefail
repo=${1:?usage: report_render_test.sh REPO [REPORT_DIR]}
given=${2:-}

browser=$(command -v chromium || true)
if [[ -z $browser ]]; then
  echo "SKIP: chromium is not installed (scripts/setup.sh installs it)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Chromium as root needs --no-sandbox; its profile goes to the scratch folder so runs
# never share state. --virtual-time-budget lets the load handler run before the dump.
render() { # PAGE -> body tag on stdout, screenshot in $work/shot.png
  local args=(--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars
    --user-data-dir="$work/profile" --virtual-time-budget=5000 --window-size=1200,1600)
  timeout 120 "$browser" "${args[@]}" --screenshot="$work/shot.png" "file://$1" \
    >/dev/null 2>&1 || fail "chromium could not take a screenshot of $1"
  timeout 120 "$browser" "${args[@]}" --dump-dom "file://$1" 2>/dev/null |
    grep -o '<body[^>]*>' || fail "chromium printed no <body> for $1"
}

attr() { sed -n "s/.* $1=\"\\([0-9]*\\)\".*/\\1/p" <<<"$2"; }

check_page() { # REPORT_DIR EXPECTED_STEPS
  local body
  body=$(render "$1/report.html")
  echo "rendered: $body"
  local images decoded verdicts
  images=$(attr data-images "$body")
  decoded=$(attr data-images-decoded "$body")
  verdicts=$(attr data-verdicts "$body")
  ((images >= 1)) || fail "the page embeds no figure"
  ((decoded == images)) || fail "$decoded of $images figures decoded in the browser"
  ((verdicts == $2)) || fail "$verdicts verdicts on screen, expected $2"
  [[ $(head -c 8 "$work/shot.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
    fail "the screenshot is not a PNG"
  (($(stat -c %s "$work/shot.png") > 20000)) || fail "the screenshot is nearly empty"
}

if [[ -n $given ]]; then
  # Every step's record is on the page but that of the step writing the page, which is
  # recorded once the page exists.
  check_page "$given" "$(ls "$given"/steps/*.json | grep -vc -- '-report\.json$')"
  echo "PASS: $given/report.html renders its figures and verdicts"
  exit 0
fi

report=$work/report
mkdir -p "$report"
export DEMO_STEPS=$report DEMO_WHERE=node1
# shellcheck source=scripts/lab/demo-lib.sh
source "$repo/scripts/lab/demo-lib.sh"
step ok "a step that passes" -- true
step dcb "a step whose failure is this fabric's honest outcome" --expect "4:no DCB" -- \
  bash -c 'exit 4'
step broken "a step that fails" -- bash -c 'echo "it broke" >&2; exit 2'
step hostile '<img src=x onerror="document.title=1"><script>alert(1)</script>' \
  --json json/hostile.json -- echo '{"ok": true}'
# A step whose command writes its JSON itself (fabric-nccltest -J), as the demo's does.
write_nccltest() {
  echo '{"results": [{"size": 8, "out_of_place": {"bus_bw": 0.006}},
    {"size": 4194304, "out_of_place": {"bus_bw": 0.0312}}],
    "average_bus_bandwidth": {"bandwidth": 0.0061}}' >"$report/json/nccltest.json"
}
step nccltest "a step that writes its own JSON" --writes json/nccltest.json -- write_nccltest
echo '{"results": [{"size_bytes": 65536, "avg_gbps": 0.0571}]}' >"$report/json/node2-rdma-bw.json"
((demo_failures == 1)) || fail "demo_failures is $demo_failures after one failing step"
[[ $(jq -r .verdict "$report/steps/node1-02-dcb.json") == expected ]] || fail "exit 4 not expected"
[[ $(jq -r .verdict "$report/steps/node1-03-broken.json") == fail ]] || fail "exit 2 not a failure"
[[ $(jq -r .json "$report/steps/node1-05-nccltest.json") == json/nccltest.json ]] ||
  fail "the step that writes its JSON does not link it"
compgen -G "$report/*.json" >/dev/null && fail "step records beside report.html: $(ls "$report"/*.json)"
grep -q "it broke" "$report/logs/node1-03-broken.log" || fail "the failing step's log is empty"
jq -e .ok "$report/json/hostile.json" >/dev/null || fail "the JSON step's output was not kept"
cp "$repo/tests/data/demo/mesh-heatmap.svg" "$report/"

# One step (the one writing the page, as in demo.sh) is recorded after the page.
"$repo/scripts/lab/demo-report.sh" "$report" 12.5 1 >/dev/null
html=$report/report.html
grep -q '<script>alert' "$html" && fail "a step title reached the page as markup"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$html" || fail "the hostile title is not shown"
grep -q '<p>6 steps: ' "$html" || fail "the page does not count the step writing it"
grep -q 'href="json/nccltest.json">JSON</a>' "$html" || fail "the nccltest step has no JSON link"
grep -q '0.031 at 4 MiB (average over every size from 8 B: 0.006)' "$html" ||
  fail "the all-reduce headline is not the large-message busbw with the average beside it"
grep -q 'rdma_rxe runs RoCE in software' "$html" || fail "the RDMA figure is not explained"
check_page "$report" 5

# A figure the browser cannot decode must be counted as such.
printf 'not an svg' >"$report/mesh-heatmap.svg"
"$repo/scripts/lab/demo-report.sh" "$report" 12.5 >/dev/null
body=$(render "$html")
[[ $(attr data-images-decoded "$body") == 0 ]] || fail "a broken figure counted as decoded"

echo "PASS: the report renders its figures and verdicts, and notices a broken figure"
