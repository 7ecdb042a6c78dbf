# demo-report.jq - renders the demo's step records (slurped) as one HTML page.
# Variables: $figures [{name, caption, data}], $facts [{label, value, file, note}], $host,
# $when, $total (seconds), $pending (steps recorded after the page: the one writing it).
def esc: tostring | gsub("&"; "&amp;") | gsub("<"; "&lt;") | gsub(">"; "&gt;")
  | gsub("\""; "&quot;");
def badge: "<span class=\"verdict \(.)\">\(.)</span>";

sort_by(.where != "host", .where, .seq) as $steps
| ($steps | map(select(.verdict == "fail")) | length) as $failed
| ($steps | map(select(.verdict == "expected")) | length) as $expected
| (if $failed == 0 then "pass" else "fail" end) as $overall
| [
  "<!DOCTYPE html>",
  "<html lang=\"en\"><head><meta charset=\"utf-8\">",
  "<title>fabrickit demo: \($overall)</title>",
  "<style>",
  "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}",
  "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}",
  "table{border-collapse:collapse;width:100%}td,th{padding:.3em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}",
  "td.num{text-align:right;font-variant-numeric:tabular-nums}",
  ".verdict{display:inline-block;min-width:5.5em;text-align:center;border-radius:.3em;padding:0 .4em;font-weight:600}",
  ".pass{background:#d7f5dd;color:#135d24}.expected{background:#fff1c2;color:#6b5200}.fail{background:#fbd5d5;color:#8a1010}",
  "figure{display:inline-block;margin:1em 2em 1em 0;vertical-align:top}figure img{max-width:32em;border:1px solid #ddd}",
  ".note{color:#555;font-size:.9em}",
  "</style></head>",
  "<body data-verdicts=\"0\" data-images-decoded=\"0\" data-images=\"\($figures | length)\">",
  "<h1>fabrickit demo on a two-node soft-RoCE lab: \($overall | badge)</h1>",
  "<p>\($steps | length + $pending) steps: \($steps | length - $failed - $expected) passed, \($expected) with the outcome this fabric should give, \($failed) failed\(if $pending > 0 then ", and writing this page" else "" end); \($total) s in all. Host \($host | esc), \($when | esc).</p>",
  "<p class=\"note\">The lab's NICs are virtio with soft-RoCE (rdma_rxe): bandwidths are those of an emulated fabric, and a virtual NIC has no DCB, so PFC is reported as unsupported rather than configured.</p>",
  (if ($facts | length) > 0 then
    "<h2>Key results</h2><table><tr><th>what</th><th>value</th><th>from</th></tr>",
    ($facts[] | "<tr><td>\(.label | esc)\(if (.note // "") != "" then "<div class=\"note\">\(.note | esc)</div>" else "" end)</td><td>\(.value | esc)</td><td><a href=\"\(.file | esc)\">\(.file | esc)</a></td></tr>"),
    "</table>"
   else empty end),
  (if ($figures | length) > 0 then
    "<h2>Figures</h2>",
    ($figures[] | "<figure><img alt=\"\(.caption | esc)\" src=\"data:image/svg+xml;base64,\(.data)\"><figcaption>\(.caption | esc) (<a href=\"\(.name | esc)\">\(.name | esc)</a>)</figcaption></figure>")
   else empty end),
  "<h2>Steps</h2>",
  "<table><tr><th>where</th><th>step</th><th>verdict</th><th>seconds</th><th>output</th></tr>",
  ($steps[] |
    "<tr><td>\(.where | esc)</td><td>\(.title | esc)\(if .note then "<div class=\"note\">\(.note | esc)</div>" else "" end)</td>"
    + "<td class=\"v\">\(.verdict | badge)\(if .verdict == "fail" then " (exit \(.exit))" else "" end)</td>"
    + "<td class=\"num\">\(.seconds)</td>"
    + "<td><a href=\"\(.log | esc)\">log</a>\(if .json then " · <a href=\"\(.json | esc)\">JSON</a>" else "" end)</td></tr>"),
  "</table>",
  "<script>",
  "// Marks what the page really shows, for the headless-browser test: figures that decoded",
  "// (an image that failed to load has no natural width) and verdicts laid out on screen.",
  "window.addEventListener('load', function () {",
  "  var imgs = Array.prototype.slice.call(document.images);",
  "  var decoded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;",
  "  var shown = Array.prototype.slice.call(document.querySelectorAll('td.v .verdict'))",
  "    .filter(function (v) { return v.getBoundingClientRect().width > 0; }).length;",
  "  document.body.setAttribute('data-images-decoded', String(decoded));",
  "  document.body.setAttribute('data-verdicts', String(shown));",
  "});",
  "</script>",
  "</body></html>"
] | join("\n")
