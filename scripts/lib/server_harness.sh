# server_harness.sh - sourced by the shell tests and benchmarks that start servers on
# loopback: a work directory and the processes started into `pids`, both gone at exit; a
# bounded poll; fabric-exporter's port read from its start-up line, in one place.
# shellcheck shell=bash

WORK=$(mktemp -d)
pids=()
harness_cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap harness_cleanup EXIT

# poll SECONDS COMMAND...: true once COMMAND succeeds, false when the time is up.
poll() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# exporter_port LOG: the port of fabric-exporter's "listening on ADDR:PORT" line in LOG.
exporter_port() { sed -n 's/^fabric-exporter: listening on .*:\([0-9]*\)$/\1/p' "$1"; }
