"""The checks of scripts/validate-deploy that need a parser: schemas and cross-references of
the built Kubernetes manifests, Prometheus rules, the resolved compose file and the
Dockerfile. Exits non-zero listing every problem.

    check.py [--compose RESOLVED.yml] [--dockerfile PATH] BUILD.yaml…

Each BUILD.yaml is one set of manifests (a kustomize build, or one file), checked on its own."""
import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import kubernetes_validate
import yaml

K8S_VERSION = "1.32.0"  # oldest Kubernetes the manifests are meant for
SCHEMAS = os.path.join(os.path.dirname(__file__), "../../../deploy/schemas")
problems = []


def fail(where, message):
    problems.append(f"{where}: {message}")


def log(message):
    print(f"[validate-deploy] {message}", file=sys.stderr)


# --- Schemas ----------------------------------------------------------------------------

def strict(schema):
    """What kubeconform's -strict does to the schemas it converts, here to a CRD's
    openAPIV3Schema: every object schema that lists its properties, allows no others
    (`additionalProperties`) and does not keep unknown ones (no
    `x-kubernetes-preserve-unknown-fields`) gets `additionalProperties: false`, recursively,
    so that a misspelled field fails here instead of being pruned silently by the API server.
    `x-kubernetes-int-or-string` becomes "an integer or a string" (JSON Schema has no such
    type). CEL rules (`x-kubernetes-validations`) are not evaluated."""
    if not isinstance(schema, dict):
        return schema
    if ("properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        schema["additionalProperties"] = False
    if schema.get("x-kubernetes-int-or-string"):
        schema.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    for sub in schema.get("properties", {}).values():
        strict(sub)
    for key in ("items", "additionalProperties", "not"):
        strict(schema.get(key))
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []):
            strict(sub)
    return schema


crd_validators = {}


def crd_validator(api, kind):
    """The validator of deploy/schemas/GROUP_VERSION_KIND.json, or None if not vendored."""
    if (api, kind) not in crd_validators:
        group, _, version = api.rpartition("/")
        path = os.path.join(SCHEMAS, f"{group}_{version}_{kind}.json")
        validator = None
        if group and os.path.exists(path):
            with open(path) as f:
                validator = jsonschema.Draft7Validator(strict(json.load(f)))
        crd_validators[(api, kind)] = validator
    return crd_validators[(api, kind)]


def validate_schema(where, doc):
    api, kind = doc.get("apiVersion"), doc.get("kind")
    validator = crd_validator(api, kind)
    if validator is not None:
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
            fail(where, f"{'/'.join(map(str, e.absolute_path)) or '(object)'}: {e.message}")
        # A CRD schema leaves metadata to the API server: check it as a core object's.
        doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata", {})}
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        fail(where, f"no schema for {api} {kind} (vendor its CRD's schema in deploy/schemas/, see its README.md)")
    except kubernetes_validate.ValidationError as e:
        fail(where, f"{'/'.join(map(str, e.path))}: {e.message}")


def check_rules(where, rule):
    """promtool on the rule groups of a PrometheusRule (its spec is a Prometheus rule file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(rule["spec"], f)
        f.flush()
        run = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    if run.returncode != 0:
        out = [l.strip() for l in (run.stdout + run.stderr).replace(f.name, "spec").splitlines()]
        fail(where, "promtool check rules: " + "; ".join(l for l in out if l and not l.startswith("Checking ")))


# --- Cross-references: what a schema cannot say -------------------------------------------

def duration_seconds(s):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", s)
    return int(m.group(1)) * {"ms": 0.001, None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def selects(selector, labels):
    """A label selector with matchLabels and matchExpressions."""
    def expression(e):
        present, value = e["key"] in labels, labels.get(e["key"])
        return {"In": present and value in e.get("values", []), "NotIn": value not in e.get("values", []),
                "Exists": present, "DoesNotExist": not present}[e["operator"]]
    return matches(selector.get("matchLabels"), labels) and all(map(expression, selector.get("matchExpressions", [])))


def http_probe(container, probe):
    get = container.get(probe, {}).get("httpGet", {})
    return get.get("path"), get.get("port")


def check_workloads(name, by_kind, config):
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    secret_names = {s["metadata"]["name"] for s in by_kind.get("Secret", [])} | {"reelfarm-secrets"}
    for w in list(deployments.values()) + by_kind.get("Job", []):
        where = f"{name}: {w['kind']}/{w['metadata']['name']}"
        pod = w["spec"]["template"]["spec"]
        for c in pod["containers"]:
            args = " ".join(c.get("args", []))
            if args not in ("serve api", "serve worker", "serve notifier", "migrate"):
                fail(where, f"container {c['name']} runs `{args}`, not a reelfarm role")
            for ref in c.get("envFrom", []):
                if "secretRef" in ref and ref["secretRef"]["name"] not in secret_names:
                    fail(where, f"envFrom names unknown Secret {ref['secretRef']['name']}")
            if args == "serve api":
                if http_probe(c, "readinessProbe") != ("/readyz", "ops"):
                    fail(where, "the api's readiness probe must be GET /readyz on port `ops` (not served on the public port)")
                if http_probe(c, "livenessProbe")[0] != "/healthz":
                    fail(where, "the api's liveness probe must be GET /healthz")
            elif args in ("serve worker", "serve notifier") and http_probe(c, "livenessProbe") != ("/healthz", "ops"):
                fail(where, "the liveness probe must be GET /healthz on port `ops`")
            if args.startswith("serve "):
                ops = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}.get("ops")
                listen = config.get("REELFARM_OPS_LISTEN", "")
                if ops is None or not listen.endswith(f":{ops}"):
                    fail(where, f"container {c['name']} needs port `ops` where REELFARM_OPS_LISTEN ({listen or 'unset'}) listens")
            if args == "serve worker":
                timeout = duration_seconds(config.get("REELFARM_JOB_TIMEOUT", "2h"))
                grace = pod.get("terminationGracePeriodSeconds", 30)
                if grace < timeout:
                    fail(where, f"terminationGracePeriodSeconds {grace} is shorter than REELFARM_JOB_TIMEOUT ({timeout:.0f} s): renders under way would be killed")
        if w["kind"] == "Deployment" and not matches(w["spec"]["selector"].get("matchLabels"), w["spec"]["template"]["metadata"].get("labels", {})):
            fail(where, "selector does not match the pod labels")
    return deployments


def check_references(name, by_kind, deployments):
    pod_labels = [d["spec"]["template"]["metadata"].get("labels", {}) for d in deployments.values()]
    for kind in ("PodDisruptionBudget", "Service"):
        for o in by_kind.get(kind, []):
            sel = o["spec"]["selector"]
            sel = sel.get("matchLabels", sel) if kind == "PodDisruptionBudget" else sel
            if not any(matches(sel, labels) for labels in pod_labels):
                fail(f"{name}: {kind}/{o['metadata']['name']}", "selects no pods of any Deployment")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        if hpa["spec"]["scaleTargetRef"]["name"] not in deployments:
            fail(f"{name}: HPA/{hpa['metadata']['name']}", "scale target is not a Deployment of the build")
    auths = {a["metadata"]["name"] for a in by_kind.get("TriggerAuthentication", [])}
    scaled = {}
    for so in by_kind.get("ScaledObject", []):
        where = f"{name}: ScaledObject/{so['metadata']['name']}"
        spec = so["spec"]
        target = spec["scaleTargetRef"]["name"]
        if target not in deployments:
            fail(where, f"scale target {target} is not a Deployment of the build")
        elif target in scaled:
            fail(where, f"{target} is already scaled by {scaled[target]} (KEDA allows one ScaledObject per workload)")
        scaled[target] = so["metadata"]["name"]
        # The CRD's CEL rule, which jsonschema does not run.
        if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
            fail(where, "minReplicaCount above maxReplicaCount")
        for t in spec["triggers"]:
            if t["type"] == "rabbitmq" and t["metadata"].get("queueName") not in ("render", "convert"):
                fail(where, f"queue {t['metadata'].get('queueName')} is not one the workers consume")
            ref = t.get("authenticationRef", {}).get("name")
            if ref and ref not in auths:
                fail(where, f"authenticationRef {ref} is not in the build")
    for sm in by_kind.get("ServiceMonitor", []):
        where = f"{name}: ServiceMonitor/{sm['metadata']['name']}"
        services = [s for s in by_kind.get("Service", []) if selects(sm["spec"]["selector"], s["metadata"].get("labels", {}))]
        ports = {p.get("name") for s in services for p in s["spec"]["ports"]}
        if not services:
            fail(where, "selects no Service")
        for ep in sm["spec"]["endpoints"]:
            if ep.get("port") not in ports:
                fail(where, f"port {ep.get('port')} is not a port of the selected Service")
    for pm in by_kind.get("PodMonitor", []):
        where = f"{name}: PodMonitor/{pm['metadata']['name']}"
        pods = [d["spec"]["template"] for d in deployments.values() if selects(pm["spec"]["selector"], d["spec"]["template"]["metadata"].get("labels", {}))]
        if not pods:
            fail(where, "selects no pods of any Deployment")
        for ep in pm["spec"].get("podMetricsEndpoints", []):
            for pod in pods:
                ports = {p.get("name") for c in pod["spec"]["containers"] for p in c.get("ports", [])}
                if ep.get("port") not in ports:
                    fail(where, f"port {ep.get('port')} is not a port of {pod['metadata']['labels'].get('app.kubernetes.io/component')} pods")


def check_build(path):
    name = os.path.basename(path).removesuffix(".yaml")
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    count = len(problems)
    by_kind = {}
    for doc in docs:
        where = f"{name}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        validate_schema(where, doc)
        if doc.get("kind") == "PrometheusRule" and doc.get("apiVersion") == "monitoring.coreos.com/v1":
            check_rules(where, doc)
        by_kind.setdefault(doc.get("kind"), []).append(doc)
    rules = len(by_kind.get("PrometheusRule", []))
    if len(problems) > count:
        return rules  # the cross-references assume valid objects
    config = {}
    for cm in by_kind.get("ConfigMap", []):
        config.update(cm.get("data", {}))
    check_references(name, by_kind, check_workloads(name, by_kind, config))
    log(f"{name}: {len(docs)} objects checked" + (f", {rules} PrometheusRule(s) by promtool" if rules else ""))
    return rules


def check_compose(path):
    """The worker scales, every reelfarm service runs after the migration."""
    with open(path) as f:
        services = yaml.safe_load(f)["services"]
    worker = services.get("worker", {})
    if "container_name" in worker or worker.get("ports"):
        fail("compose worker", "container_name or host ports prevent `--scale worker=N`")
    for name in ("api", "worker", "notifier", "migrate"):
        svc = services.get(name)
        if svc is None:
            fail("compose", f"service {name} missing")
            continue
        deps = svc.get("depends_on", {})
        if name != "migrate" and deps.get("migrate", {}).get("condition") != "service_completed_successfully":
            fail(f"compose {name}", "must wait for the migrate service")
        for dep, how in deps.items():
            if how.get("condition") == "service_healthy" and "healthcheck" not in services.get(dep, {}):
                fail(f"compose {name}", f"waits for {dep} to be healthy, which has no healthcheck")


def check_dockerfile(path):
    """The structure (hadolint checks the style)."""
    with open(path) as f:
        lines = re.sub(r"\\\n", " ", f.read()).splitlines()
    instructions = [l.strip() for l in lines if l.strip() and not l.strip().startswith("#")]
    stages = [i for i in instructions if i.upper().startswith("FROM ")]
    final = instructions[instructions.index(stages[-1]):]
    if len(stages) < 3:
        fail("Dockerfile", "expected a multi-stage build (dependencies, sources, runtime)")
    if not re.search(r"debian:\$\{DEBIAN_RELEASE\}-slim|debian:bookworm-slim", stages[-1]):
        fail("Dockerfile", f"runtime stage is not Debian slim: {stages[-1]}")
    if not any(re.match(r"ARG DEBIAN_RELEASE=bookworm$", i) for i in instructions):
        fail("Dockerfile", "DEBIAN_RELEASE must default to bookworm (the libraries the build links)")
    user = [i for i in final if i.upper().startswith("USER ")]
    if not user or user[-1].split()[1].split(":")[0] in ("root", "0"):
        fail("Dockerfile", "the runtime stage must switch to a non-root USER")
    for required in ("HEALTHCHECK ", "ENTRYPOINT ", "LABEL "):
        if not any(i.upper().startswith(required) for i in final):
            fail("Dockerfile", f"the runtime stage has no {required.strip()}")
    if not any(i.startswith('ENTRYPOINT ["reelfarm"]') for i in final):
        fail("Dockerfile", 'ENTRYPOINT must be ["reelfarm"] (one image, the role as arguments)')
    with open(".dockerignore") as f:
        ignored = [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]
    for i in instructions:
        parts = i.split()
        if parts[0].upper() != "COPY" or any(p.startswith("--from") for p in parts):
            continue
        for src in [p.rstrip("/") for p in parts[1:-1] if not p.startswith("--")]:
            if src == ".":
                continue
            if not os.path.exists(src):
                fail("Dockerfile", f"COPY source {src} does not exist")
            if any(fnmatch.fnmatch(src, pat) or src.startswith(pat + "/") for pat in ignored):
                fail("Dockerfile", f"COPY source {src} is excluded by .dockerignore")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compose", help="the output of `docker-compose config`")
    parser.add_argument("--dockerfile")
    parser.add_argument("builds", nargs="+")
    args = parser.parse_args()
    rules = sum(check_build(path) for path in args.builds)
    if not rules:
        log("no PrometheusRule in these manifests: no alerting or recording rules for promtool to check")
    if args.compose:
        check_compose(args.compose)
    if args.dockerfile:
        check_dockerfile(args.dockerfile)
    if problems:
        print("\n".join(f"[validate-deploy] FAIL {p}" for p in problems), file=sys.stderr)
        sys.exit(1)
    log("all valid")


main()
