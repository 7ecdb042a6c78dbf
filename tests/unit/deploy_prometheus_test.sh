#!/usr/bin/env bash
# deploy/prometheus through promtool: the scrape configuration and the alerting rules are
# valid, and every alert fires (and stays silent) as rules_test.yaml says.
#   deploy_prometheus_test.sh REPO
set -euo pipefail
dir=${1:?usage: deploy_prometheus_test.sh REPO}/deploy/prometheus
# Debian's Prometheus is built without Kubernetes service discovery, so its promtool does
# not know kubernetes_sd_configs: check everything else of the scrape job (relabelling,
# timeouts) with file discovery in its place.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e 's/^    kubernetes_sd_configs:$/    file_sd_configs:/' \
  -e 's/^      - role: pod$/      - files: [targets.json]/' \
  -e '/^        namespaces: /d' "$dir/scrape.yaml" >"$work/scrape.yaml"
grep -q file_sd_configs "$work/scrape.yaml"
promtool check config --syntax-only "$work/scrape.yaml"
promtool check rules "$dir/rules.yaml"
promtool test rules "$dir/rules_test.yaml"
