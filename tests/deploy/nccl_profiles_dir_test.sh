#!/bin/bash
# The node's NCCL profiler directory as the DaemonSet leaves it, on the real kernel: training
# pods running as their own users can write their files there, one pod cannot remove or
# replace another's, and the exporter (root without capabilities) can still remove exited
# writers' files.
#
#   nccl_profiles_dir_test.sh REPO
#
# The kubelet creates a DirectoryOrCreate hostPath 0755 root. The test does the same in a
# private mount namespace (a tmpfs on /run, nothing of the host's /run touched), runs every
# init container of the manifest that mounts that directory, with the container's
# command, as root with no capability and no new privileges (what `capabilities: {drop:
# [ALL]}` leaves), then writes as two unprivileged users. Needs root (netns tier).
set -euo pipefail

repo=$1
manifest=$repo/deploy/kubernetes/daemonset.yaml
dir=/run/fabric/nccl
# Root without any capability, as a container with capabilities: {drop: [ALL]} and
# allowPrivilegeEscalation: false runs.
no_caps=(setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all --)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (a mount namespace and other users)"
  exit 0
fi

# Each init container that mounts the hostPath $dir, as one shell-quoted command a line,
# with the path it mounts it at (the test requires the host's path, as the plugin's default
# directory is the same inside the training pods).
commands=$(python3 - "$manifest" "$dir" <<'EOF'
import shlex, sys, yaml
manifest, host_dir = sys.argv[1], sys.argv[2]
for doc in yaml.safe_load_all(open(manifest)):
    if not doc or doc.get("kind") != "DaemonSet":
        continue
    spec = doc["spec"]["template"]["spec"]
    volumes = {v["name"] for v in spec.get("volumes", [])
               if v.get("hostPath", {}).get("path") == host_dir}
    for init in spec.get("initContainers", []):
        for mount in init.get("volumeMounts", []):
            if mount["name"] in volumes:
                if mount["mountPath"] != host_dir:
                    sys.exit(f"{init['name']} mounts {host_dir} at {mount['mountPath']}")
                print(shlex.join(init.get("command", []) + init.get("args", [])))
EOF
)
echo "init containers on $dir: ${commands:-none}"

unshare --mount --propagation private bash -euo pipefail -s "$dir" "$commands" \
  "${no_caps[@]}" <<'EOF'
dir=$1 commands=$2; shift 2
no_caps=("$@")
mount -t tmpfs -o mode=0755 fabric-test-run /run
mkdir -p "$dir" # as the kubelet's DirectoryOrCreate: 0755, root
[ "$("${no_caps[@]}" grep CapEff /proc/self/status | cut -f2)" = 0000000000000000 ] ||
  { echo "FAILED: the init container stand-in still has capabilities"; exit 1; }
while IFS= read -r command; do
  [ -n "$command" ] || continue
  eval "set -- $command"
  "${no_caps[@]}" "$@" || { echo "FAILED: init container '$command' exited $?"; exit 1; }
done <<< "$commands"

as_user() { local uid=$1; shift; setpriv --reuid "$uid" --regid "$uid" --clear-groups -- "$@"; }
as_user 1000 sh -c "echo 'comm a' > $dir/nccl-a.prof" ||
  { echo "FAILED: a training pod (uid 1000) cannot write its profile in $dir ($(stat -c %A "$dir"))"; exit 1; }
as_user 1001 sh -c "echo 'comm b' > $dir/nccl-b.prof" ||
  { echo "FAILED: a second training pod (uid 1001) cannot write in $dir"; exit 1; }
if as_user 1001 rm -f "$dir/nccl-a.prof" 2>/dev/null || [ ! -e "$dir/nccl-a.prof" ]; then
  echo "FAILED: uid 1001 removed uid 1000's profile"; exit 1
fi
if as_user 1001 mv -f "$dir/nccl-b.prof" "$dir/nccl-a.prof" 2>/dev/null ||
   [ "$(cat "$dir/nccl-a.prof")" != "comm a" ]; then
  echo "FAILED: uid 1001 replaced uid 1000's profile"; exit 1
fi
"${no_caps[@]}" rm "$dir/nccl-a.prof" ||
  { echo "FAILED: the exporter (root, no capability) cannot remove an exited writer's file"; exit 1; }
echo "nccl profiles directory as deployed: PASSED ($(stat -c %A "$dir"))"
EOF
