#!/usr/bin/env bash
# tests/deploy/daemonset_as_pods.py, the image tier's conversion of the DaemonSets into
# Pods podman plays: it drops kube-rbac-proxy (no API server there) with its token volume
# and service account and keeps every other container; and it refuses a manifest without
# that proxy, so the image tier cannot go on playing a pod the manifest no longer describes.
#   deploy_kube_play_pods_test.sh REPO
set -euo pipefail
repo=${1:?usage: deploy_kube_play_pods_test.sh REPO}
python3 -c 'import yaml' 2>/dev/null || { echo "missing python3-yaml (scripts/setup.sh)"; exit 1; }
convert=$repo/tests/deploy/daemonset_as_pods.py
manifest=$repo/deploy/kubernetes/daemonset.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# convert MANIFEST: the pods and ConfigMap into $work.
convert() {
  "$convert" "$1" localhost/fabrickit:test "$work/node" node-pod cni-pod config secret \
    "$work/pod.yaml" "$work/cni-pod.yaml" "$work/configmap.yaml"
}

convert "$manifest"
python3 - "$manifest" "$work/pod.yaml" <<'PY'
import sys
import yaml

manifest, pod_file = sys.argv[1:]
daemonset = next(d for d in yaml.safe_load_all(open(manifest))
                 if d and d["kind"] == "DaemonSet" and d["metadata"]["name"] == "fabrickit-node")
pod = yaml.safe_load(open(pod_file))
names = lambda spec: [c["name"] for c in spec.get("initContainers", []) + spec["containers"]]
want = [n for n in names(daemonset["spec"]["template"]["spec"]) if n != "kube-rbac-proxy"]
got = names(pod["spec"])
assert "kube-rbac-proxy" in names(daemonset["spec"]["template"]["spec"]), "no proxy in the manifest"
assert got == want, f"containers {got}, expected {want}"
volumes = [v["name"] for v in pod["spec"]["volumes"]]
assert not any("projected" in v for v in pod["spec"]["volumes"]), f"a token volume is left: {volumes}"
assert "serviceAccountName" not in pod["spec"], "the proxy's service account is left"
print(f"ok - the node pod plays {', '.join(got)}: kube-rbac-proxy and its token volume dropped")
PY

# The manifest without its proxy: the conversion must refuse it, naming the container.
python3 - "$manifest" >"$work/no-proxy.yaml" <<'PY'
import sys
import yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "fabrickit-node":
        spec = d["spec"]["template"]["spec"]
        spec["containers"] = [c for c in spec["containers"] if c["name"] != "kube-rbac-proxy"]
print(yaml.safe_dump_all(docs))
PY
if convert "$work/no-proxy.yaml" 2>"$work/error.txt"; then
  echo "not ok - a manifest without kube-rbac-proxy was converted"
  exit 1
fi
grep -q "kube-rbac-proxy" "$work/error.txt" || { echo "not ok - error: $(cat "$work/error.txt")"; exit 1; }
echo "ok - a manifest without kube-rbac-proxy is refused: $(cat "$work/error.txt")"
