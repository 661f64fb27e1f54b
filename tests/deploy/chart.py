"""Render the Helm chart offline, as `helm template` would, for the deploy tests.

No `helm` binary is packaged for this machine, so the chart goes through helm-python-sdk
(Helm's Go SDK behind a C ABI): the same template engine, schema validation and lint.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "thoughtline"
DASHBOARD = CHART / "dashboards" / "thoughtline.json"
RELEASE = "tl"
NAMESPACE = "llm"
FULLNAME = "tl-thoughtline"

GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$namespace": ".*"}

# Kinds from CRDs (Prometheus Operator, KEDA): kubernetes-validate ships no schema for them, so
# their structure is asserted by dedicated tests instead.
CUSTOM_RESOURCE_KINDS = frozenset(
    {"ServiceMonitor", "PrometheusRule", "ScaledObject", "TriggerAuthentication"}
)

# The value sets CI renders, lints and validates: defaults, every optional resource on, and the
# OTLP export with its ServiceMonitor.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "keda-servicemonitor": {
        "keda": {"enabled": True, "passwordSecret": {"name": "redis-auth"}},
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "alertLabels": {"team": "llm"}},
        "dashboard": {"enabled": True, "namespace": "monitoring"},
    },
    "hpa-existing-secret": {
        "autoscaling": {"enabled": True},
        "redis": {"existingSecret": "thoughtline-redis"},
        "networkPolicy": {
            "metricsFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}],
            "redisTo": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "redis"}}}],
        },
        "extraEnv": [{"name": "PYTHONFAULTHANDLER", "value": "1"}],
        "image": {"digest": "sha256:" + "0" * 64},
    },
    "export": {
        "export": {
            "enabled": True,
            "replicas": 2,
            "otlp": {
                "endpoint": "https://otlp.example.com",
                "headersSecret": {"name": "otlp-auth"},
                "compression": "gzip",
            },
            "content": {"thinking": False},
            "collectorTo": [{"ipBlock": {"cidr": "10.0.0.0/8"}}],
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        },
    },
}


def render(values: dict[str, Any] | None = None) -> dict[str, str]:
    """Template path -> manifest, whitespace-trimmed and without empty ones or NOTES.txt."""
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return {
        path: manifest.strip() + "\n"
        for path, manifest in sorted(rendered.items())
        if manifest.strip() and not path.endswith("NOTES.txt")
    }


def manifest_stream(rendered: dict[str, str]) -> str:
    """One YAML stream shaped like `helm template` output."""
    return "".join(f"---\n# Source: {path}\n{manifest}" for path, manifest in rendered.items())


def documents(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    stream = manifest_stream(render(values))
    return [document for document in yaml.safe_load_all(stream) if document]


def only(values: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The one rendered resource of `kind`; fails when there is none or several."""
    found = [document for document in documents(values) if document["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def kinds(values: dict[str, Any] | None = None) -> list[str]:
    return sorted(document["kind"] for document in documents(values))


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panel_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, PromQL expression) for every target of every panel, rows included."""
    queries = []
    for panel in _all_panels(board["panels"]):
        for target in panel.get("targets", []):
            queries.append((panel["title"], target["expr"]))
    return queries


def substitute_variables(expression: str) -> str:
    """Fill in Grafana's variables as Grafana would with "All" namespaces and a 1m window."""
    for variable, value in GRAFANA_VARIABLES.items():
        expression = expression.replace(variable, value)
    assert "$" not in expression, f"unknown Grafana variable in {expression}"
    return expression


def _all_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    flat = []
    for panel in panels:
        flat.append(panel)
        flat.extend(_all_panels(panel.get("panels", [])))
    return flat


def tool(name: str) -> str | None:
    """A command-line tool from this virtualenv's bin first (pip-installed linters), else PATH."""
    beside_python = Path(sys.executable).parent / name
    if beside_python.exists():
        return str(beside_python)
    return shutil.which(name)


def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, **options)
