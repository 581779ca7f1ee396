"""kubernetes/: rendered by kustomize, valid against Kubernetes 1.32's schemas and the Prometheus Operator's
CRDs, its generated files current, its rules good for promtool, its config good for kvwatch, and the
Containerfile clean for hadolint. (No image is built: no registry of base images is reachable here.)"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import jsonschema
import kubernetes_validate
import pytest
import yaml

from kvwatch.assets import asset_bytes
from kvwatch.config.load import parse_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.kubernetes import GENERATED  # noqa: E402

#: The Kubernetes version the manifests are validated against (kubectl 1.32 is this machine's).
KUBERNETES = "1.32"
#: The Prometheus Operator's CRDs (v0.93.0), vendored: see tests/schemas/prometheus-operator/README.md.
CRDS = ROOT / "tests" / "schemas" / "prometheus-operator"


def tool(name: str) -> str:
    """A command-line tool: beside the running Python (a venv's), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed"
    return found


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """`kubectl kustomize kubernetes/`, its documents."""
    out = subprocess.run(
        [tool("kubectl"), "kustomize", str(ROOT / "kubernetes")], capture_output=True, text=True, check=True
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def test_generated_manifests_are_current() -> None:
    """The PrometheusRule and the dashboard ConfigMap are what `python -m scripts.kubernetes` writes now
    from the shipped rules and dashboard."""
    for name, make in GENERATED.items():
        assert (ROOT / "kubernetes" / name).read_text(encoding="utf-8") == make(), (
            f"kubernetes/{name} is stale: run python -m scripts.kubernetes"
        )


def test_kustomize_renders_every_part(rendered: list[dict[str, Any]]) -> None:
    """One of each: Namespace, config ConfigMap, dashboard ConfigMap, Service, DaemonSet, PodMonitor,
    PrometheusRule; all in namespace kvwatch but the Namespace."""
    kinds = sorted((doc["kind"], doc["metadata"]["name"].rsplit("-", 1)[0]) for doc in rendered)
    assert kinds == [
        ("ConfigMap", "kvwatch"),
        ("ConfigMap", "kvwatch-config"),
        ("DaemonSet", "kvwatch"),
        ("Namespace", "kvwatch"),
        ("PodMonitor", "kvwatch"),
        ("PrometheusRule", "kvwatch"),
        ("Service", "kvwatch"),
    ]
    assert {doc["metadata"].get("namespace") for doc in rendered if doc["kind"] != "Namespace"} == {"kvwatch"}


def _strict(schema: Any) -> Any:
    """A CRD's schema as `kubectl --validate=strict` reads it: an object with properties and no
    additionalProperties takes no other key."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and out.get("type") == "object"
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        if isinstance(out.get("pattern"), str) and "(?i)" in out["pattern"]:  # (Go's flag, mid-pattern)
            out["pattern"] = "(?i)" + out["pattern"].replace("(?i)", "")
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def crd_schema(kind: str) -> dict[str, Any]:
    """The vendored CRD's v1 openAPIV3Schema for `kind`, made strict."""
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            schema["properties"]["metadata"] = {"type": "object"}
            strict: dict[str, Any] = _strict(schema)
            return strict
    raise AssertionError(f"no vendored CRD for {kind}")


def test_every_manifest_is_valid_for_kubernetes_and_the_prometheus_operator(
    rendered: list[dict[str, Any]],
) -> None:
    """Core kinds against Kubernetes 1.32's schemas (kubernetes-validate, strict: no unknown field); the
    Prometheus Operator's kinds against its CRDs' schemas, strict the same way."""
    for doc in rendered:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            jsonschema.validate(doc, crd_schema(doc["kind"]))
        else:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    broken = copy.deepcopy(next(doc for doc in rendered if doc["kind"] == "PodMonitor"))
    broken["spec"]["podMetricsEndpoints"][0]["honourLabels"] = True  # (a typo is caught)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, crd_schema("PodMonitor"))
    wrong = copy.deepcopy(next(doc for doc in rendered if doc["kind"] == "DaemonSet"))
    wrong["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True
    with pytest.raises(kubernetes_validate.utils.ValidationError):
        kubernetes_validate.validate(wrong, KUBERNETES, strict=True)


def test_the_daemonset_reads_the_nodes_pod_logs_safely(rendered: list[dict[str, Any]]) -> None:
    """hostPath /var/log/pods read-only, a node state directory, not root, read-only root filesystem, no
    capability, requests and limits, liveness and readiness on kvwatch's endpoints, the config from the
    ConfigMap and the Slack URL from a Secret."""
    (daemonset,) = [doc for doc in rendered if doc["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["pods"]["hostPath"]["path"] == "/var/log/pods" and mounts["pods"]["readOnly"] is True
    assert volumes["state"]["hostPath"]["path"] == mounts["state"]["mountPath"] == "/var/lib/kvwatch"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}
    assert container["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
    assert container["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    assert volumes["config"]["configMap"]["name"].startswith("kvwatch-config")
    assert volumes["slack"]["secret"]["secretName"] == "kvwatch-slack"
    (configmap,) = [d for d in rendered if d["metadata"]["name"] == volumes["config"]["configMap"]["name"]]
    config = parse_config(tomllib.loads(configmap["data"]["kvwatch.toml"]), Path("/"))
    (notifier,) = config.notifiers
    assert str(notifier.url_file).startswith(mounts["slack"]["mountPath"])
    assert str(config.state_dir) == mounts["state"]["mountPath"]
    (source,) = config.sources
    assert source.type == "pods" and config.server.port == container["ports"][0]["containerPort"]


def test_the_prometheus_rule_holds_the_shipped_rules_and_promtool_takes_them(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The PrometheusRule's groups are the rules file's, and promtool checks them."""
    (rule,) = [doc for doc in rendered if doc["kind"] == "PrometheusRule"]
    shipped = yaml.safe_load(asset_bytes("kvwatch-rules.yml"))
    assert rule["spec"] == shipped
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    subprocess.run([tool("promtool"), "check", "rules", str(path)], check=True, capture_output=True)


def test_the_dashboard_config_map_is_labelled_for_grafanas_sidecar(rendered: list[dict[str, Any]]) -> None:
    """The dashboard ConfigMap carries `grafana_dashboard: "1"` and the shipped dashboard."""
    (dashboard,) = [d for d in rendered if d["kind"] == "ConfigMap" and "kvwatch.json" in d.get("data", {})]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"]["kvwatch.json"].strip() == asset_bytes("kvwatch.json").decode().strip()


def test_the_containerfile_passes_hadolint() -> None:
    """hadolint finds nothing in the Containerfile; it runs as a user that is not root."""
    command = [tool("hadolint"), str(ROOT / "Containerfile")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    users = [line for line in (ROOT / "Containerfile").read_text().splitlines() if line.startswith("USER ")]
    assert users and not users[-1].split()[1].startswith(("0", "root"))
