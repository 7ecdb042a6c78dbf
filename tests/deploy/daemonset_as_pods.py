#!/usr/bin/env python3
"""deploy/kubernetes/daemonset.yaml's two DaemonSets as Pods podman 4.3 plays (kube_play_test.sh).

  daemonset_as_pods.py MANIFEST IMAGE NODE_DIR POD CNI_POD CONFIG SECRET POD_OUT CNI_POD_OUT CM_OUT

What podman needs changed is said in kube_play_test.sh's header. One container is dropped:
kube-rbac-proxy, which the stand-in node cannot run (there is no API server to review a
token, and its image cannot be pulled). The exporter stays on 127.0.0.1, where the proxy
would have reached it, and the test asks it there. A manifest without that proxy is an
error: the test would otherwise go on checking a pod that is no longer the manifest's.
"""
import os
import sys

import yaml

PROXY = "kube-rbac-proxy"


def fail(message):
    sys.exit(f"daemonset_as_pods.py: {message}")


def drop_proxy(spec):
    """Removes kube-rbac-proxy, its service-account token volume and the service account."""
    proxies = [c for c in spec["containers"] if c["name"] == PROXY]
    if len(proxies) != 1:
        fail(f"the fabrickit-node DaemonSet has {len(proxies)} containers named {PROXY}, "
             "expected 1: update the conversion with the manifest")
    token_volumes = {m["name"] for m in proxies[0].get("volumeMounts", [])}
    spec["containers"] = [c for c in spec["containers"] if c["name"] != PROXY]
    for container in spec.get("initContainers", []) + spec["containers"]:
        for mount in container.get("volumeMounts", []):
            if mount["name"] in token_volumes:
                fail(f"container {container['name']} mounts {mount['name']}, {PROXY}'s volume")
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in token_volumes]
    spec.pop("serviceAccountName", None)


def as_pod(daemonset, name, image, node, config, secret):
    template = daemonset["spec"]["template"]
    spec = template["spec"]
    spec["restartPolicy"] = "Never"
    for container in spec.get("initContainers", []) + spec["containers"]:
        container["image"] = image
        # On the host network a containerPort only names the port; podman 4.3 refuses it there.
        container.pop("ports", None)
    # The node's state and the CNI directory move under the stand-in; /sys and /proc stay,
    # except a part this machine lacks: configfs (/sys/kernel/config), which an RDMA node's
    # systemd mounts, is not there on every kernel, and the kubelet, like podman, refuses to
    # start a pod whose Directory hostPath is missing. Nor can it move under the stand-in:
    # its mount point lies inside the read-only /sys bind, where runc cannot create one. So
    # a /sys path this machine lacks is left out, volume and mounts (fabric-pfc finds no
    # RDMA device here to write RDMA-CM defaults for).
    missing = set()
    for volume in spec["volumes"]:
        if "configMap" in volume:
            volume["configMap"]["name"] = config
        if "secret" in volume:
            volume["secret"]["secretName"] = secret
            volume["secret"]["optional"] = False  # podman 4.3 dereferences it when unset
        path = volume.get("hostPath", {}).get("path")
        if not path:
            continue
        if not path.startswith(("/sys", "/proc")):
            volume["hostPath"]["path"] = node + path
        elif not os.path.exists(path):
            missing.add(volume["name"])
            print(f"daemonset_as_pods.py: {path} is not on this machine: "
                  f"volume {volume['name']} left out", file=sys.stderr)
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in missing]
    for container in spec.get("initContainers", []) + spec["containers"]:
        container["volumeMounts"] = [
            m for m in container.get("volumeMounts", []) if m["name"] not in missing]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": template["metadata"]["labels"],
            "annotations": {"io.podman.annotations.init.container.type": "always"},
        },
        "spec": spec,
    }


def main(argv):
    if len(argv) != 10:
        fail("usage: " + __doc__.splitlines()[2].strip())
    manifest, image, node, pod_name, cni_pod_name, config, secret, pod_out, cni_pod_out, cm_out = argv
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    config_map = next(d for d in docs if d["kind"] == "ConfigMap")
    daemonsets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}

    # The profile names this node's netdev: lo, which has no DCB support.
    profile = yaml.safe_load(config_map["data"]["pfc-profile.yaml"])
    profile["devices"] = ["lo"]
    config_map["data"]["pfc-profile.yaml"] = yaml.safe_dump(profile, sort_keys=False)
    config_map["metadata"]["name"] = config

    drop_proxy(daemonsets["fabrickit-node"]["spec"]["template"]["spec"])
    pod = as_pod(daemonsets["fabrickit-node"], pod_name, image, node, config, secret)
    cni_pod = as_pod(daemonsets["fabrickit-cni"], cni_pod_name, image, node, config, secret)
    yaml.safe_dump(cni_pod, open(cni_pod_out, "w"), sort_keys=False)
    yaml.safe_dump(pod, open(pod_out, "w"), sort_keys=False)
    yaml.safe_dump(config_map, open(cm_out, "w"), sort_keys=False)


if __name__ == "__main__":
    main(sys.argv[1:])
