"""deploy/k8s: the manifests parse as YAML and carry what running them relies on (issue
15): a StatefulSet with a headless Service, one claim per replica mounted at the data
directory, a readiness probe that pings the daemon, requests and limits, a locked-down
securityContext, threads from the CPU limit; the Indexed Job defines every volume it
mounts. Usage: check_k8s.py DEPLOY_K8S_DIR"""

import os
import sys

try:
    import yaml
except ImportError:
    sys.exit("check_k8s: no python3 yaml module: apt-get install python3-yaml (deploy/setup.sh)")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_kind(ds, kind):
    return [d for d in ds if d.get("kind") == kind]


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def check_container(c, where, data_mount=None):
    res = c.get("resources", {})
    for k in ("requests", "limits"):
        for r in ("cpu", "memory"):
            check(r in res.get(k, {}), "%s: resources.%s.%s" % (where, k, r))
    sc = c.get("securityContext", {})
    check(sc.get("readOnlyRootFilesystem") is True, where + ": readOnlyRootFilesystem")
    check(sc.get("allowPrivilegeEscalation") is False, where + ": allowPrivilegeEscalation")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], where + ": capabilities drop ALL")


def check_pod_security(spec, where):
    psc = spec.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True, where + ": runAsNonRoot")
    check(isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0,
          where + ": a numeric non-root runAsUser (runAsNonRoot needs one for a named USER)")


def threads_from_limit(c, var, where):
    e = env_of(c).get(var, {})
    ref = e.get("valueFrom", {}).get("resourceFieldRef", {})
    check(ref.get("resource") == "limits.cpu" and ref.get("containerName") == c["name"],
          "%s: %s from resourceFieldRef limits.cpu" % (where, var))


def check_volumes(spec, where, claim_templates=()):
    defined = {v["name"] for v in spec.get("volumes", [])} | set(claim_templates)
    for c in spec["containers"]:
        for m in c.get("volumeMounts", []):
            check(m["name"] in defined, "%s: volume %s is mounted but not defined" %
                  (where, m["name"]))


def main(d):
    ds = docs(os.path.join(d, "onepathd.yaml"))
    check(not by_kind(ds, "Deployment"), "onepathd.yaml: no Deployment (a StatefulSet)")
    sts = by_kind(ds, "StatefulSet")
    check(len(sts) == 1, "onepathd.yaml: one StatefulSet")
    svcs = by_kind(ds, "Service")
    if sts:
        s = sts[0]
        spec = s["spec"]
        tmpl = spec["template"]
        pod = tmpl["spec"]
        head = [v for v in svcs if v["metadata"]["name"] == spec.get("serviceName")]
        check(head and head[0]["spec"].get("clusterIP") == "None",
              "serviceName names a headless Service (clusterIP: None)")
        if head:
            check(head[0]["spec"]["selector"].items() <= tmpl["metadata"]["labels"].items(),
                  "the headless Service selects the StatefulSet's pods")
        check(spec["selector"]["matchLabels"].items() <= tmpl["metadata"]["labels"].items(),
              "the selector matches the pod labels")
        vct = [t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])]
        check(vct, "volumeClaimTemplates: one claim per replica")
        c = next(x for x in pod["containers"] if x["name"] == "onepathd")
        env = env_of(c)
        data_dir = env.get("ONEPATHD_DATA_DIR", {}).get("value")
        check(data_dir, "ONEPATHD_DATA_DIR is set")
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        check(mounts.get(data_dir) in vct, "the data directory is a claim of the template")
        probe = c.get("readinessProbe", {}).get("exec", {}).get("command", [])
        check(probe[:3] == ["onepath", "remote", "ping"] and "--url" in probe,
              "readinessProbe: onepath remote ping --url ...")
        if "--url" in probe:
            url = probe[probe.index("--url") + 1]
            port = int(url.rsplit(":", 1)[1])
            listen = env.get("ONEPATHD_LISTEN", {}).get("value", "")
            check(listen.endswith(":%d" % port), "the probe dials the port the daemon listens on")
            check(port in [p["containerPort"] for p in c.get("ports", [])], "the port is exposed")
        check_container(c, "onepathd")
        check_pod_security(pod, "onepathd pod")
        threads_from_limit(c, "ONEPATHD_THREADS", "onepathd")
        check_volumes(pod, "onepathd", vct)
        # readOnlyRootFilesystem: /tmp must be a volume, the data dir is the claim.
        check("/tmp" in mounts, "onepathd: /tmp is a writable volume")

    ds = docs(os.path.join(d, "bake-job.yaml"))
    jobs = by_kind(ds, "Job")
    check(len(jobs) == 1, "bake-job.yaml: one Job")
    if jobs:
        j = jobs[0]["spec"]
        check(j.get("completionMode") == "Indexed", "the Job is Indexed")
        pod = j["template"]["spec"]
        c = pod["containers"][0]
        args = " ".join(c.get("args", []) + c.get("command", []))
        check("--shard" in args and "JOB_COMPLETION_INDEX" in args and
              "/%d" % j["completions"] in args, "--shard I/N with N = completions")
        check_container(c, "bake")
        check_pod_security(pod, "bake pod")
        threads_from_limit(c, "THREADS", "bake")
        check("--threads" in args, "bake --threads from the CPU limit")
        check_volumes(pod, "bake")
        claims = {v["metadata"]["name"] for v in by_kind(ds, "PersistentVolumeClaim")}
        for v in pod.get("volumes", []):
            pvc = v.get("persistentVolumeClaim")
            if pvc:
                check(pvc["claimName"] in claims,
                      "bake-job.yaml defines the claim %s it uses" % pvc["claimName"])
        tiles = [x for x in by_kind(ds, "PersistentVolumeClaim")
                 if x["metadata"]["name"] == "onepath-tiles"]
        check(tiles and "ReadWriteMany" in tiles[0]["spec"]["accessModes"],
              "the shared output claim is ReadWriteMany")

    for f in failures:
        print("check_k8s: " + f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("check_k8s: deploy/k8s passed")


if __name__ == "__main__":
    main(sys.argv[1])
