#!/usr/bin/env python3
"""Consistency checks of deploy/kubernetes and deploy/container that a
schema cannot make: the pieces must agree with each other and with the
daemon's configuration. Run by tests/deploy/test_manifests.sh with the
venv's Python (PyYAML).

usage: check_manifests.py REPO_ROOT [CONF_OUT]
  CONF_OUT: where to write the ConfigMap's gpuleased.conf, for
  `gpuleased --check-config`.
"""
import configparser
import json
import os
import re
import sys

import yaml

errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)
    return cond


def port_of(hostport):
    m = re.fullmatch(r"(?:\[[^\]]*\]|[^:]*):(\d+)", hostport.strip())
    return int(m.group(1)) if m else None


def under(path, mount):
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def main():
    root = sys.argv[1]
    conf_out = sys.argv[2] if len(sys.argv) > 2 else None
    kdir = os.path.join(root, "deploy", "kubernetes")

    # kustomization.yaml lists every manifest of the directory, and only those.
    with open(os.path.join(kdir, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    manifests = sorted(
        n for n in os.listdir(kdir)
        if n.endswith((".yaml", ".yml")) and n != "kustomization.yaml")
    check(sorted(kust.get("resources", [])) == manifests,
          f"kustomization.yaml resources {sorted(kust.get('resources', []))} "
          f"!= the manifests here {manifests}")

    objs = {}
    for name in manifests:
        with open(os.path.join(kdir, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    objs[(doc["kind"], doc["metadata"]["name"])] = doc

    ns = objs.get(("Namespace", "gpulease"))
    svc = objs.get(("Service", "gpuleased"))
    ds = objs.get(("DaemonSet", "gpuleased"))
    cm = objs.get(("ConfigMap", "gpuleased-config"))
    for what, o in (("Namespace gpulease", ns), ("Service gpuleased", svc),
                    ("DaemonSet gpuleased", ds), ("ConfigMap gpuleased-config", cm)):
        check(o is not None, f"no {what}")
    if errors:
        return
    for (kind, name), o in objs.items():
        if kind != "Namespace":
            check(o["metadata"].get("namespace") == "gpulease",
                  f"{kind} {name} is not in namespace gpulease")

    # The Service: headless, one UDP port named gpulease (the SRV record
    # _gpulease._udp.gpuleased.gpulease.svc...), only ready pods.
    spec = svc["spec"]
    check(spec.get("clusterIP") == "None", "Service gpuleased is not headless (clusterIP: None)")
    check(not spec.get("publishNotReadyAddresses", False),
          "Service gpuleased publishes pods that are not ready")
    ports = spec.get("ports", [])
    check(len(ports) == 1 and ports[0].get("name") == "gpulease"
          and ports[0].get("protocol") == "UDP",
          f"Service gpuleased's port is not one UDP port named gpulease: {ports}")

    # The DaemonSet's selector matches its pod labels, and so does the Service's.
    tmpl = ds["spec"]["template"]
    labels = tmpl["metadata"].get("labels", {})
    match = ds["spec"]["selector"].get("matchLabels", {})
    check(bool(match) and all(labels.get(k) == v for k, v in match.items()),
          f"DaemonSet selector {match} does not match its pod labels {labels}")
    check(not ds["spec"]["selector"].get("matchExpressions"),
          "DaemonSet selector has matchExpressions (not checked here)")
    ssel = spec.get("selector", {})
    check(bool(ssel) and all(labels.get(k) == v for k, v in ssel.items()),
          f"Service selector {ssel} does not match the DaemonSet's pod labels {labels}")

    pod = tmpl["spec"]
    containers = pod["containers"]
    check(len(containers) == 1, "the DaemonSet has more than one container")
    c = containers[0]
    cports = {p["name"]: p for p in c.get("ports", [])}
    gp = cports.get("gpulease", {})
    check(gp.get("protocol") == "UDP" and gp.get("containerPort") == 5701,
          f"container port gpulease is not UDP 5701: {gp}")
    check(ports and ports[0].get("targetPort") in ("gpulease", gp.get("containerPort")),
          "Service's targetPort is not the container's gpulease port")
    mp = cports.get("metrics", {})
    check(mp.get("protocol", "TCP") == "TCP" and mp.get("containerPort") == 9701,
          f"container port metrics is not TCP 9701: {mp}")

    def probe_port(probe):
        p = probe["httpGet"]["port"]
        return cports.get(p, {}).get("containerPort") if isinstance(p, str) else p

    for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
        probe = c.get(kind)
        if kind == "startupProbe" and probe is None:
            continue
        if not check(probe and "httpGet" in probe, f"no httpGet {kind}"):
            continue
        check(probe["httpGet"].get("path") == "/healthz",
              f"{kind} path is {probe['httpGet'].get('path')}, not /healthz")
        check(probe_port(probe) == 9701, f"{kind} is not on the metrics port 9701")

    check("nvidia.com/gpu" in c.get("resources", {}).get("limits", {}),
          "no nvidia.com/gpu limit")
    check(c.get("resources", {}).get("requests"), "no resource requests")
    sc = c.get("securityContext", {})
    check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
    check(not sc.get("privileged", False), "the container is privileged")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities do not drop ALL")

    # Volumes: TLS from the Secret gpuleased-tls, state on hostPath.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    mount_of = {}
    for path, vname in mounts.items():
        mount_of.setdefault(vname, path)
    tls = [n for n, v in vols.items() if v.get("secret", {}).get("secretName") == "gpuleased-tls"]
    check(len(tls) == 1 and tls[0] in mount_of, "the Secret gpuleased-tls is not mounted")
    state = [n for n, v in vols.items()
             if v.get("hostPath", {}).get("path") == "/var/lib/gpuleased"]
    check(len(state) == 1 and state[0] in mount_of, "hostPath /var/lib/gpuleased is not mounted")
    cfgv = [n for n, v in vols.items()
            if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
    check(len(cfgv) == 1 and cfgv[0] in mount_of, "the ConfigMap is not mounted")

    # The image: the kustomization's images entry names the DaemonSet's
    # image, and the Dockerfile's ENTRYPOINT reads the file the ConfigMap
    # is mounted as.
    image = c["image"].split(":")[0]
    check(any(i.get("name") == image for i in kust.get("images", [])),
          f"kustomization.yaml images does not name {image}")
    with open(os.path.join(root, "deploy", "container", "Dockerfile")) as f:
        dockerfile = f.read()
    eps = re.findall(r"^ENTRYPOINT\s+(\[.*\])\s*$", dockerfile, re.M)
    check(bool(eps), "no ENTRYPOINT in deploy/container/Dockerfile")
    if eps:
        ep = json.loads(eps[0])  # the daemon's stage comes first
        check(ep[:2] == ["gpuleased", "--config"] and len(ep) == 3,
              f"Dockerfile ENTRYPOINT is {ep}, not gpuleased --config FILE")
        if cfgv and len(ep) == 3:
            check(mounts.get(ep[2]) == cfgv[0],
                  f"the ConfigMap is not mounted at {ep[2]}, the ENTRYPOINT's --config")

    # The ConfigMap's gpuleased.conf agrees with the pod.
    conf_text = cm["data"].get("gpuleased.conf")
    if not check(conf_text, "the ConfigMap has no gpuleased.conf"):
        return
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"))
    cp.read_string(conf_text)
    if not check(cp.has_section("gpuleased"), "gpuleased.conf has no [gpuleased] section"):
        return
    g = cp["gpuleased"]
    check(port_of(g.get("listen", "")) == gp.get("containerPort"),
          f"listen {g.get('listen')} is not the gpulease containerPort")
    check(not g.get("listen", "").startswith(("127.", "localhost", "[::1]")),
          "listen is on loopback: no other pod can reach it")
    check(port_of(g.get("metrics-listen", "")) == mp.get("containerPort"),
          f"metrics-listen {g.get('metrics-listen')} is not the metrics containerPort")
    for key, vname, what in (("cert", tls[0] if tls else None, "the TLS Secret"),
                             ("key", tls[0] if tls else None, "the TLS Secret"),
                             ("state-dir", state[0] if state else None, "the state hostPath")):
        val = g.get(key)
        if check(val, f"gpuleased.conf sets no {key}") and vname in mount_of:
            check(under(val, mount_of[vname]), f"{key} = {val} is not under {what}'s mount")
    if g.get("auth", "none") == "token":
        tpath = g.get("tenants", "")
        check(any(under(tpath, p) for p in mounts), f"tenants = {tpath} is not mounted")
    elif g.get("auth", "none") == "none":
        check(g.get("allow-anonymous") == "true",
              "auth = none beyond loopback needs allow-anonymous")
    net_threads = int(g.get("net-threads", "0"))
    listen_port = port_of(g.get("listen", "")) or 0
    declared = {p["containerPort"] for p in c.get("ports", []) if p.get("protocol") == "UDP"}
    stripes = set(range(listen_port + 1, listen_port + 1 + net_threads))
    check(stripes <= declared, f"stripe ports {sorted(stripes - declared)} are not declared")

    if conf_out:
        with open(conf_out, "w") as f:
            f.write(conf_text)


main()
if errors:
    for e in errors:
        print(f"check_manifests: {e}", file=sys.stderr)
    sys.exit(1)
print("check_manifests: consistent")
