#!/usr/bin/env bash
# demo-report.sh - builds report.html from the demo's step records (see demo-lib.sh).
#   demo-report.sh REPORT_DIR TOTAL_SECONDS [PENDING]
# PENDING: steps recorded after the page is written (the step writing it), counted in the
# page's total so that it says what demo.sh says at the end.
# The page is self-contained: styles inline, every figure (*.svg in REPORT_DIR) embedded
# as a data: URI, so it opens from disk or as a mail attachment; logs and JSON files are
# linked relative to it. A small script marks on <body> how many figures decoded and how
# many verdicts it shows, which the rendering test reads back from a headless browser.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: demo-report.sh REPORT_DIR TOTAL_SECONDS}
total=${2:?usage: demo-report.sh REPORT_DIR TOTAL_SECONDS}
pending=${3:-0}
cd "$dir"

shopt -s nullglob
records=(steps/*.json)
((${#records[@]})) || { echo "demo-report.sh: no step records in $dir" >&2; exit 1; }

# Figures: name, caption (from the file name), base64 body.
figures='[]'
for svg in *.svg; do
  caption=
  case $svg in
    mesh-heatmap*) caption="fabric-probe mesh: RDMA write bandwidth of every pair (Gb/s)" ;;
    *busbw*) caption="fabric-nccltest: all-reduce bus bandwidth by message size" ;;
    *) caption=${svg%.svg} ;;
  esac
  figures=$(jq --arg name "$svg" --arg caption "$caption" --arg data "$(base64 -w0 "$svg")" \
    '. + [{name: $name, caption: $caption, data: $data}]' <<<"$figures")
done

# Key figures a reader looks for first, each from the JSON a step kept (absent ones are
# left out, never invented).
facts=$(jq -n '[]')
add_fact() { # LABEL FILE JQ_EXPRESSION NOTE
  [[ -s $2 ]] || return 0
  local value
  value=$(jq -r "$3" "$2" 2>/dev/null) || return 0
  [[ -n $value && $value != null ]] || return 0
  facts=$(jq --arg what "$1" --arg value "$value" --arg file "$2" --arg note "$4" \
    '. + [{label: $what, value: $value, file: $file, note: $note}]' <<<"$facts")
}
# Each line: LABEL|NOTE|FILE|JQ_EXPRESSION (the expression last: it may hold '|').
while IFS='|' read -r label note file expr; do
  add_fact "$label" "$file" "$expr" "$note"
done <"$here/demo-report-facts.txt"

host=$(hostname)
when=$(date -u '+%Y-%m-%d %H:%M UTC')
jq -s -r --argjson figures "$figures" --argjson facts "$facts" --arg host "$host" \
  --arg when "$when" --arg total "$total" --argjson pending "$pending" \
  -f "$here/demo-report.jq" \
  "${records[@]}" >report.html.tmp
mv report.html.tmp report.html
echo "$dir/report.html"
