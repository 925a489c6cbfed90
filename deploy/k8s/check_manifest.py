#!/usr/bin/env python3
"""Parses the Kubernetes manifests and checks what docs/scale-out.md promises.

No cluster is involved: this catches YAML and structure mistakes only.
Exit 77 (meson: SKIP) without python3-yaml.

usage: check_manifest.py FILE
"""
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (deploy/install-deps.sh)")
    sys.exit(77)

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
errors = []
for kind in ("Namespace", "ConfigMap", "DaemonSet"):
    if kind not in kinds:
        errors.append(f"no {kind}")
if not errors:
    pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    res = c["resources"]
    if res["requests"] != res["limits"]:
        errors.append("requests != limits: not Guaranteed QoS")
    if "hugepages-2Mi" not in res["limits"]:
        errors.append("no hugepages-2Mi")
    caps = c["securityContext"]["capabilities"]
    if caps.get("drop") != ["ALL"] or sorted(caps["add"]) != sorted(
            ["IPC_LOCK", "NET_ADMIN", "SYS_NICE", "SYS_RAWIO"]):
        errors.append(f"capabilities: {caps}")
    if c["securityContext"].get("privileged"):
        errors.append("privileged")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        cmd = c[probe]["exec"]["command"]
        if cmd[0] != "spinctl" or cmd[-1] != "health":
            errors.append(f"{probe}: {cmd}")
    volumes = {v["name"]: v for v in pod["volumes"]}
    if volumes["run-spinnic"]["hostPath"]["path"] != "/run/spinnic":
        errors.append("control socket not on hostPath /run/spinnic")
    config = kinds["ConfigMap"]["data"]["spinnic.textproto"]
    script = c["args"][0]
    for placeholder in ("@WIRE_PCI@", "@HOST_PCI@", "@MAIN_CPU@",
                        "@WORKER_CPU@"):
        if placeholder not in config or placeholder not in script:
            errors.append(f"{placeholder} not in both config and script")
for e in errors:
    print(f"FAIL: {e}")
print(f"{len(docs)} documents: " + ", ".join(
    f"{d['kind']} {d['metadata']['name']}" for d in docs))
sys.exit(1 if errors else 0)
