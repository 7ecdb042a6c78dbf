#!/usr/bin/env bash
# The node's two DaemonSets' pods as a node would run them: the pod templates of
# deploy/kubernetes/daemonset.yaml (fabrickit-cni, then fabrickit-node), on the image
# scripts/image.sh builds, each played with `podman kube play` on a stand-in node. Checks
# that install-cni puts fabric-cni into the node's CNI directory by copy-then-rename, that
# apply-pfc lets the pod start on a NIC without DCB, that the exporter answers /metrics on
# the node's loopback (and nowhere else) with its collectors working under the pod's
# capabilities, and that the probe agent runs a test for a client holding the Secret's token
# and refuses one without it (or from outside its --allow list).
#   kube_play_test.sh REPO
# FABRIC_IMAGE=TAG plays an image already built (image_test.sh's, say); otherwise
# scripts/image.sh builds one (about 25 minutes on 2 cores). Label `image`: scripts/test.sh
# runs it only when asked, FABRIC_TEST_TIERS=image. Root, for rootful podman and a network
# namespace. Every wait polls a condition and is bounded.
#
# The stand-in node: the pods' hostPath directories are under a temporary directory
# (the host's /sys and /proc, and what is under them, stay, mounted as the manifest says), and its host network is
# a network namespace of the test's own, so the exporter's iptables chains and the pod's
# ports never touch this machine's. Its loopback carries 10.254.0.1, inside the agent's
# --allow 10.0.0.0/8, as the node's address. The profile's netdev is `lo`, which has no
# DCB support: fabric-pfc exits 4 there, as on a node whose NIC lacks DCB.
#
# The stand-in node has no API server, and kube-rbac-proxy's image cannot be pulled:
# tests/deploy/daemonset_as_pods.py drops the proxy container (and its token volume) and
# fails if the manifest has no such container to drop; the test asks the exporter where the
# proxy would, on 127.0.0.1. Who may get past the proxy is checked against the schemas and
# by deploy_manifests_test.cpp, not here.
#
# podman 4.3 (Debian 12) needs the pod rewritten (daemonset_as_pods.py too): it plays Pods,
# not DaemonSets; with the DaemonSet's restartPolicy Always it restarts an exited init
# container forever and never starts the others, so the pod has Never (a crash fails the
# test instead of looping); the init containers are kept after they run (annotation
# init.container.type=always) so their logs can be read; it refuses containerPorts on the host network (they only name ports
# there), so they go. It does not create a Secret from a `kind: Secret` document: the
# token is a podman secret holding one. It ignores a Secret's stringData and writes its
# data into the volume still base64-encoded, so the client is given the file the agent
# reads (either encoding is accepted). ConfigMap and Secret volumes outlive the pod and a
# later play reuses them as they are: they get names of their own and are removed. It
# turns httpGet and tcpSocket probes into curl and nc healthchecks, which the image does
# not have, on port 0 for a named port: the test asks the probes' endpoints itself.
set -euo pipefail
repo=$(cd "${1:?usage: kube_play_test.sh REPO}" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
command -v podman >/dev/null || skip "podman is needed (scripts/setup.sh installs it)"
[[ -n ${FABRIC_IMAGE:-} ]] || command -v mmdebstrap >/dev/null ||
  skip "mmdebstrap is needed to build the image (scripts/setup.sh installs it)"
command -v catatonit >/dev/null || [[ -x /usr/libexec/podman/catatonit ]] ||
  skip "catatonit is needed for a pod's infra container (scripts/setup.sh installs it)"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is needed (scripts/setup.sh installs it)"
for tool in ip nsenter curl cmp; do
  command -v "$tool" >/dev/null || skip "$tool is needed"
done
((EUID == 0)) || skip "needs root: rootful podman, hostPath volumes, a network namespace"

readonly NODE_IP=10.254.0.1 METRICS_PORT=10901 AGENT_PORT=18515
work=$(mktemp -d)
netns=fabrickit-kube-play-$$
pod=fabrickit-node-test-$$
cni_pod=fabrickit-cni-test-$$
config=fabrickit-config-test-$$
secret=fabrickit-probe-token-test-$$
built=
# shellcheck source=scripts/lib/podman.sh
source "$repo/scripts/lib/podman.sh"
podman_setup "$work/containers.conf"
pm() { "${PODMAN[@]}" "$@"; }
on_node() { nsenter --net="/run/netns/$netns" "$@"; } # in the stand-in node's network
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }
cleanup() {
  local rc=$?
  set +e
  if ((rc != 0)); then
    for c in "$cni_pod-install-cni" "$cni_pod-cni-installed" "$pod-apply-pfc" "$pod-pfc-keeper" \
      "$pod-exporter" "$pod-probe-agent"; do
      pm container exists "$c" 2>/dev/null || continue
      echo "--- logs of $c" >&2
      pm logs "$c" 2>&1 | tail -20 >&2
    done
  fi
  pm pod rm -f -t 5 "$cni_pod" >/dev/null 2>&1
  pm pod rm -f -t 5 "$pod" >/dev/null 2>&1
  pm secret rm "$secret" >/dev/null 2>&1
  # podman keeps a ConfigMap's or Secret's volume, and a later play would reuse its files.
  pm volume rm -f "$config" "$secret" >/dev/null 2>&1
  ip netns del "$netns" 2>/dev/null
  [[ -n $built ]] && pm rmi -f "$built" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for WHAT SECONDS COMMAND...: poll until COMMAND succeeds, fail at the deadline.
wait_for() {
  local what=$1 limit=$2 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what: not within $limit s"
    for c in exporter probe-agent; do
      [[ $(pm inspect --format '{{.State.Status}}' "$pod-$c" 2>/dev/null) == exited ]] &&
        fail "$what: container $c exited"
    done
    sleep 0.5
  done
}

# --- the image ---
if [[ -n ${FABRIC_IMAGE:-} ]]; then
  tag=$FABRIC_IMAGE
  pm image exists "$tag" || fail "FABRIC_IMAGE=$tag: no such image"
else
  tag=localhost/fabrickit:kube-play-$$
  "$repo/scripts/image.sh" --tag "$tag" >/dev/null
  built=$tag
fi

# --- the stand-in node ---
node=$work/node
cni_bin=$node/opt/cni/bin
mkdir -p "$cni_bin" "$node/var/lib/fabric/textfile"
# A plugin already installed, held open as a running ADD would hold it: the new one must
# arrive by rename, leaving this one's content to whoever has it open.
printf '#!/bin/sh\necho an older fabric-cni\n' >"$cni_bin/fabric-cni"
chmod 0755 "$cni_bin/fabric-cni"
exec {old_plugin}<"$cni_bin/fabric-cni"
old_content=$(cat "$cni_bin/fabric-cni")
printf '# HELP fabrickit_kube_play_marker Left in the textfile directory by kube_play_test.sh.\n# TYPE fabrickit_kube_play_marker gauge\nfabrickit_kube_play_marker 1\n' \
  >"$node/var/lib/fabric/textfile/kube_play.prom"

ip netns add "$netns"
ip -n "$netns" link set lo up
ip -n "$netns" address add "$NODE_IP/32" dev lo

# The token, as `kubectl create secret generic --from-literal=token=...` would hold it.
token=$(head -c 32 /dev/urandom | base64)
printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ntype: Opaque\ndata:\n  token: %s\n' \
  "$secret" "$(printf %s "$token" | base64 -w0)" >"$work/secret.yaml"
pm secret create "$secret" "$work/secret.yaml" >/dev/null

# --- each DaemonSet's pod template as a Pod, and the ConfigMap ---
"$repo/tests/deploy/daemonset_as_pods.py" "$repo/deploy/kubernetes/daemonset.yaml" "$tag" "$node" \
  "$pod" "$cni_pod" "$config" "$secret" "$work/pod.yaml" "$work/cni-pod.yaml" "$work/configmap.yaml"

# --- play them on the node: the CNI installer's pod first, as it has no prerequisite ---
if ! on_node "${PODMAN[@]}" kube play "$work/cni-pod.yaml" >"$work/play-cni.log" 2>&1; then
  cat "$work/play-cni.log" >&2
  fail "podman kube play of the fabrickit-cni pod"
fi
if ! on_node "${PODMAN[@]}" kube play --configmap "$work/configmap.yaml" "$work/pod.yaml" \
  >"$work/play.log" 2>&1; then
  cat "$work/play.log" >&2
  fail "podman kube play of the fabrickit-node pod"
fi

# install-cni: the image's plugin, a regular executable, renamed into place.
[[ $(pm inspect --format '{{.State.ExitCode}}' "$cni_pod-install-cni") == 0 ]] ||
  fail "install-cni exited $(pm inspect --format '{{.State.ExitCode}}' "$cni_pod-install-cni")"
installed=$cni_bin/fabric-cni
[[ -f $installed && ! -L $installed && $(stat -c %a "$installed") == 755 ]] ||
  fail "fabric-cni in the CNI directory is not a regular 0755 file: $(ls -l "$installed")"
pm run --rm --network none "$tag" cat /usr/local/bin/fabric-cni >"$work/image-fabric-cni"
cmp -s "$installed" "$work/image-fabric-cni" || fail "the installed fabric-cni is not the image's"
leftover=$(find "$cni_bin" -mindepth 1 ! -name fabric-cni)
[[ -z $leftover ]] || fail "install-cni left $leftover behind"
[[ $(cat "/dev/fd/$old_plugin") == "$old_content" ]] ||
  fail "the plugin was overwritten in place: a running ADD would see it change"
exec {old_plugin}<&-
version=$(pm logs "$cni_pod-install-cni" 2>&1)
[[ $version == *"fabric-cni "* ]] || fail "install-cni did not run the installed plugin: $version"
pass "install-cni: fabric-cni renamed into the CNI directory, the image's own (${version%%$'\n'*})"

# apply-pfc: no DCB on lo, and the pod goes on.
pfc_log=$(pm logs "$pod-apply-pfc" 2>&1)
[[ $(pm inspect --format '{{.State.ExitCode}}' "$pod-apply-pfc") == 0 ]] ||
  fail "apply-pfc failed on a netdev without DCB: $pfc_log"
[[ $pfc_log == *'"device":"lo"'* || $pfc_log == *'"device": "lo"'* ]] ||
  fail "apply-pfc did not report on lo: $pfc_log"
pass "apply-pfc: lo has no DCB support, reported, and the pod starts"

# exporter: /metrics on the node's loopback, where kube-rbac-proxy would ask; not on the
# node's address.
metrics=http://127.0.0.1:$METRICS_PORT
wait_for "the exporter's /healthz" 60 on_node curl -sf "$metrics/healthz"
if on_node curl -s -o /dev/null --max-time 5 "http://$NODE_IP:$METRICS_PORT/metrics"; then
  fail "the exporter answers on the node's address $NODE_IP, not only on its loopback"
fi
scrape=$work/scrape.txt
# The first reconcile of the accounting may still be on its way: wait for its gauge.
wait_for "fabric_accounting_active 1" 60 \
  sh -c "nsenter --net=/run/netns/$netns curl -sf $metrics/metrics >$scrape && grep -qx 'fabric_accounting_active 1' $scrape"
for family in fabric_exporter_build_info fabric_accounting_backend_info \
  'fabric_textfile_mtime_seconds{file="kube_play.prom"}' fabrickit_kube_play_marker; do
  grep -qF "$family" "$scrape" || fail "/metrics has no $family"
done
if command -v promtool >/dev/null; then
  promtool check metrics <"$scrape" >"$work/promtool.txt" 2>&1 ||
    fail "promtool check metrics: $(cat "$work/promtool.txt")"
fi
pass "exporter: /metrics on 127.0.0.1:$METRICS_PORT only, $(grep -c '^fabric_' "$scrape") fabric_ series" \
  "(accounting active, the textfile directory read$(command -v promtool >/dev/null && echo ', promtool clean'))"

# probe-agent: the Secret's token, as the agent reads it.
agent_token=$work/token
wait_for "the agent's port" 60 on_node bash -c "exec 3<>/dev/tcp/$NODE_IP/$AGENT_PORT"
pm exec "$pod-probe-agent" cat /etc/fabric-token/token >"$agent_token"
[[ $(cat "$agent_token") == "$token" || $(cat "$agent_token") == "$(printf %s "$token" | base64 -w0)" ]] ||
  fail "the agent's token file is not the Secret's token"
head -c 32 /dev/urandom | base64 >"$work/wrong-token"
# probe CLIENT-ARGS...: fabric-probe tcp from the node's network, in a container of the image.
probe() {
  on_node "${PODMAN[@]}" run --rm --network host --cap-drop all -v "$work:/test:ro" "$tag" \
    fabric-probe tcp --port "$AGENT_PORT" --duration 1s --iters 200 --timeout 10s "$@" 2>&1
}
out=$(probe "$NODE_IP" --token-file /test/token) || fail "fabric-probe tcp with the token: $out"
[[ $out == *"tcp_bw to $NODE_IP:$AGENT_PORT"* && $out == *"tcp_lat to $NODE_IP:$AGENT_PORT"* ]] ||
  fail "fabric-probe tcp with the token printed no results: $out"
pass "probe-agent: fabric-probe tcp with the token: $(grep -m1 'client -> agent' <<<"$out" | tr -s ' ')"
if out=$(probe "$NODE_IP"); then fail "a client without the token was served: $out"; fi
[[ $out == *"requires a token"* ]] || fail "a client without the token: $out"
pass "probe-agent: a client without the token is refused ($(grep -m1 'requires a token' <<<"$out"))"
if out=$(probe "$NODE_IP" --token-file /test/wrong-token); then
  fail "a client with another token was served: $out"
fi
[[ $out == *"authentication failed"* ]] || fail "a client with another token: $out"
pass "probe-agent: a client with another token is refused"
if out=$(probe 127.0.0.1 --token-file /test/token); then
  fail "a client from 127.0.0.1, outside --allow, was served: $out"
fi
[[ $out == *"does not accept clients from 127.0.0.1"* ]] || fail "a client outside --allow: $out"
pass "probe-agent: a client from outside its --allow list is refused"

# pfc-keeper: on lo (no DCB) the profile is not in force: its metric says 0 and no NFD
# feature file labels the node.
keeper_prom=$node/var/lib/fabric/textfile/fabric_pfc_profile.prom
wait_for "pfc-keeper's metric file" 60 test -f "$keeper_prom"
grep -qx 'fabric_pfc_profile_applied 0' "$keeper_prom" ||
  fail "pfc-keeper on a netdev without DCB: $(cat "$keeper_prom")"
[[ ! -e $node/etc/kubernetes/node-feature-discovery/features.d/fabrickit-pfc ]] ||
  fail "pfc-keeper labelled a node whose profile is not in force"
pass "pfc-keeper: fabric_pfc_profile_applied 0 on a netdev without DCB, the node not labelled"

echo "PASS: the DaemonSets' pods run under podman kube play on $tag"
