#!/usr/bin/env bash
# deploy/prometheus/scrape.yaml on a real Prometheus scraping the built fabric-exporter
# through a TLS front that checks the bearer token as kube-rbac-proxy does in the DaemonSet
# (rbac_proxy_stand_in.py: no API server here): the job's https, token file and TLS settings
# get the metrics, and the same job with another token gets none; a file of the textfile
# directory that sets node, job and instance does not replace the target's (they come back
# as exported_*), and a series without such labels carries the target's node. The scrape
# job is deploy's own, with its token file moved to the test's, a static target in place of
# kubernetes_sd (Debian's Prometheus has no Kubernetes discovery) and the node label the
# relabelling would set.
#   deploy_scrape_labels_test.sh REPO FABRIC_EXPORTER
# Needs no privileges. Every wait polls a condition and is bounded.
set -euo pipefail
REPO=$(realpath "${1:?usage: deploy_scrape_labels_test.sh REPO FABRIC_EXPORTER}")
EXPORTER=$(realpath "${2:?usage: deploy_scrape_labels_test.sh REPO FABRIC_EXPORTER}")
for tool in prometheus curl jq python3 openssl; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/setup.sh installs it)"; exit 1; }
done
python3 -c 'import yaml' 2>/dev/null || { echo "missing python3-yaml (scripts/setup.sh)"; exit 1; }

# shellcheck source=scripts/lib/server_harness.sh
source "$REPO/scripts/lib/server_harness.sh"
failures=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
mkdir -p "$WORK/textfile"
cat >"$WORK/textfile/forged.prom" <<'PROM'
# HELP site_forged_total A site's file that claims another node, job and instance.
# TYPE site_forged_total counter
site_forged_total{node="elsewhere",job="other",instance="10.9.9.9:1"} 7
# HELP site_plain A site's file without target labels.
# TYPE site_plain gauge
site_plain 3
PROM
printf 'collectors:\n  textfile: {directory: %s}\n' "$WORK/textfile" >"$WORK/exporter.yaml"
"$EXPORTER" --config "$WORK/exporter.yaml" --listen 127.0.0.1:0 --log-level info \
  2>"$WORK/exporter.log" &
pids+=($!)
has_port() { [[ -n $(exporter_port "$WORK/exporter.log") ]]; }
poll 30 has_port || { cat "$WORK/exporter.log"; exit 1; }
EXPORTER_PORT=$(exporter_port "$WORK/exporter.log")

# The proxy's part: its own self-signed certificate, as kube-rbac-proxy makes at start, and
# Prometheus' token.
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=fabrickit-node -days 1 \
  -keyout "$WORK/tls.key" -out "$WORK/tls.crt" 2>/dev/null
head -c 32 /dev/urandom | base64 >"$WORK/token"
head -c 32 /dev/urandom | base64 >"$WORK/wrong-token"
python3 "$REPO/tests/unit/rbac_proxy_stand_in.py" "$WORK/tls.crt" "$WORK/tls.key" "$WORK/token" \
  "http://127.0.0.1:$EXPORTER_PORT" "$WORK/proxy.port" 2>"$WORK/proxy.log" &
pids+=($!)
poll 30 test -s "$WORK/proxy.port" || { cat "$WORK/proxy.log"; exit 1; }
PORT=$(cat "$WORK/proxy.port")

for _ in 1 2 3 4 5; do
  PROM_PORT=$((20000 + RANDOM % 20000))
  # deploy's scrape job, its discovery replaced by the target it would find on node n1.
  python3 - "$REPO/deploy/prometheus/scrape.yaml" "127.0.0.1:$PORT" "$WORK" \
    >"$WORK/prometheus.yml" <<'PY'
import copy
import sys
import yaml

scrape, target, work = sys.argv[1:]
config = yaml.safe_load(open(scrape))
job = config["scrape_configs"][0]
assert job["authorization"]["credentials_file"].endswith("/serviceaccount/token"), job
job["authorization"]["credentials_file"] = work + "/token"
job.pop("kubernetes_sd_configs")
job["relabel_configs"] = []
job["static_configs"] = [{"targets": [target], "labels": {"node": "n1"}}]
job["scrape_interval"] = job["scrape_timeout"] = "1s"
# The same scrape by a service account the proxy refuses.
refused = copy.deepcopy(job)
refused["job_name"] = "refused-token"
refused["authorization"]["credentials_file"] = work + "/wrong-token"
config["scrape_configs"].append(refused)
print(yaml.safe_dump(config))
PY
  rm -rf "$WORK/tsdb"
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn 2>"$WORK/prometheus.log" &
  prom_pid=$!
  if poll 60 curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" -o /dev/null; then
    pids+=("$prom_pid")
    break
  fi
  kill "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  PROM_PORT=
  grep -q 'address already in use' "$WORK/prometheus.log" || break
done
[[ -n ${PROM_PORT:-} ]] || { echo "prometheus did not become ready:"; cat "$WORK/prometheus.log"; exit 1; }

# labels PROMQL: the first result's labels as sorted k=v lines ("" when none yet).
labels() {
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    jq -r '.data.result[0].metric // {} | del(.__name__) | to_entries[] | "\(.key)=\(.value)"' | sort
}
expect_labels() {
  local want got
  want=$(printf '%s\n' "${@:2}" | sort)
  answers() { [[ $(labels "$1") == "$2" ]]; }
  if poll 30 answers "$1" "$want"; then
    pass "$1 has $(echo "$want" | paste -sd, -)"
  else
    got=$(labels "$1")
    fail "$1: labels '$(echo "$got" | paste -sd, -)', expected '$(echo "$want" | paste -sd, -)'"
  fi
}
# up VALUE JOB: the job's target has been scraped and up is VALUE.
up_is() { [[ $(curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=up{job=\"$2\"}" |
  jq -r '.data.result[0].value[1] // ""') == "$1" ]]; }
if poll 30 up_is 1 fabric-exporter; then pass "scrape.yaml's job scrapes over https with its token"
else fail "scrape.yaml's job: up is not 1 through the TLS front with the token"; fi
if poll 30 up_is 0 refused-token; then pass "the same job with another token is refused (up 0)"
else fail "the job with another token: up is not 0"; fi
expect_labels site_forged_total node=n1 job=fabric-exporter "instance=127.0.0.1:$PORT" \
  exported_node=elsewhere exported_job=other exported_instance=10.9.9.9:1
expect_labels site_plain node=n1 job=fabric-exporter "instance=127.0.0.1:$PORT"

if ((failures)); then
  echo "--- prometheus.yml"; cat "$WORK/prometheus.yml"
  exit 1
fi
echo "all scrape label checks passed"
