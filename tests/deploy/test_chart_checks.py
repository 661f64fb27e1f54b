"""Offline CI checks of the Helm chart: lint, schema, kubernetes-validate, yamllint, documentation.

Every check runs on each value set in `chart.VARIANTS` (defaults, and KEDA + ServiceMonitor +
PrometheusRule + dashboard on, and HPA with an existing Secret).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.deploy import chart

HERE = Path(__file__).parent
KUBERNETES_VERSION = "1.30.0"
WARNING = 2  # helm lint severities: 1 info, 2 warning, 3 error


@pytest.mark.parametrize("variant", sorted(chart.VARIANTS))
def test_helm_lint_is_clean_in_strict_mode(variant: str) -> None:
    report = helm.lint(
        chart.CHART, chart.VARIANTS[variant], strict=True, kube_version=f"v{KUBERNETES_VERSION}"
    )
    problems = [message for message in report["messages"] if message["severity"] >= WARNING]
    assert report["errors"] == [] and problems == []


@pytest.mark.parametrize("variant", sorted(chart.VARIANTS))
def test_rendered_manifests_pass_kubernetes_validate_strict(variant: str, tmp_path: Path) -> None:
    validator = chart.tool("kubernetes-validate")
    if validator is None:
        pytest.skip("kubernetes-validate is not installed (pip install '.[test]')")
    stream = tmp_path / "manifests.yaml"
    stream.write_text(chart.manifest_stream(chart.render(chart.VARIANTS[variant])))
    result = chart.run(
        [validator, "--strict", "--kubernetes-version", KUBERNETES_VERSION, str(stream)]
    )
    lines = result.stdout.splitlines()
    failures = [line for line in lines if not line.startswith(("INFO", "WARN"))]
    assert result.returncode == 0 and failures == [], result.stdout
    # Only CRD kinds may go unvalidated; a mistyped built-in kind or apiVersion would land here.
    unvalidated = {line.split("kind ")[1].split()[0] for line in lines if line.startswith("WARN")}
    assert unvalidated <= chart.CUSTOM_RESOURCE_KINDS
    validated = sum(line.startswith("INFO") for line in lines)
    assert validated == sum(
        kind not in chart.CUSTOM_RESOURCE_KINDS for kind in chart.kinds(chart.VARIANTS[variant])
    )


def test_kubernetes_validate_catches_an_unknown_field(tmp_path: Path) -> None:
    """The strict check is live: a misspelled Deployment field fails it."""
    validator = chart.tool("kubernetes-validate")
    if validator is None:
        pytest.skip("kubernetes-validate is not installed (pip install '.[test]')")
    deployment = chart.only(None, "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(deployment))
    result = chart.run([validator, "--strict", str(broken)])
    assert result.returncode != 0 and "ERROR" in result.stdout


def _yamllint(config: Path, target: Path) -> tuple[int, str]:
    linter = chart.tool("yamllint")
    if linter is None:
        pytest.skip("yamllint is not installed (pip install '.[test]')")
    result = chart.run([linter, "--strict", "-f", "parsable", "-c", str(config), str(target)])
    return result.returncode, result.stdout


@pytest.mark.parametrize(
    "path",
    [
        chart.CHART / "values.yaml",
        chart.CHART / "Chart.yaml",
        HERE / "promtool" / "alerts_test.yaml",
    ],
    ids=lambda path: path.name,
)
def test_hand_written_yaml_passes_yamllint(path: Path) -> None:
    status, output = _yamllint(HERE / "yamllint-values.yaml", path)
    assert status == 0, output


@pytest.mark.parametrize("variant", sorted(chart.VARIANTS))
def test_rendered_manifests_pass_yamllint(variant: str, tmp_path: Path) -> None:
    stream = tmp_path / "manifests.yaml"
    stream.write_text(chart.manifest_stream(chart.render(chart.VARIANTS[variant])))
    status, output = _yamllint(HERE / "yamllint-rendered.yaml", stream)
    assert status == 0, output


def test_yamllint_catches_a_duplicate_key(tmp_path: Path) -> None:
    broken = tmp_path / "values.yaml"
    broken.write_text("---\nreplicaCount: 1\nreplicaCount: 2\n")
    status, output = _yamllint(HERE / "yamllint-values.yaml", broken)
    assert status != 0 and "key-duplicates" in output


def test_default_values_satisfy_the_schema() -> None:
    with helm.Chart.load(chart.CHART) as loaded:
        loaded.validate_schema({})
        loaded.validate_schema(loaded.values)


@pytest.mark.parametrize(
    "values",
    [
        {"replicaCount": -1},
        {"replicaCount": "2"},
        {"replicaCount": 1, "replicas": 2},
        {"image": {"digest": "latest"}},
        {"redis": {"url": "http://redis:6379"}},
        {"config": {"batchSize": 0}},
        {"config": {"blockMs": 0}},
        {"config": {"logLevel": "VERBOSE"}},
        {"config": {"inputStreams": "{x}:raw"}},
        {"metrics": {"port": 70000}},
        {"keda": {"address": "redis://redis:6379"}},
        {"keda": {"lagCount": 0}},
        {"keda": {"enableTLS": "yes"}},
        {"serviceMonitor": {"interval": "30 seconds"}},
        {"prometheusRule": {"leakedThoughtRatio": 0}},
        {"networkPolicy": {"redisPorts": []}},
        {"podDisruptionBudget": {"maxUnavailable": "half"}},
    ],
)
def test_the_schema_rejects_invalid_values(values: dict[str, Any]) -> None:
    with helm.Chart.load(chart.CHART) as loaded, pytest.raises(helm.HelmValuesError):
        loaded.validate_schema(values)


def _mapping_pairs(node: yaml.Node | None) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
    assert isinstance(node, yaml.MappingNode)
    return [(key, value) for key, value in node.value if isinstance(key, yaml.ScalarNode)]


def _documented(lines: list[str], key: yaml.ScalarNode) -> bool:
    """A `# --` comment (helm-docs style), possibly continued over more `#` lines, above `key`."""
    index = key.start_mark.line - 1
    while index >= 0 and lines[index].strip().startswith("#"):
        if lines[index].strip().startswith("# --"):
            return True
        index -= 1
    return False


def _undocumented(lines: list[str], node: yaml.Node | None, prefix: str) -> list[str]:
    """Keys with no `# --` comment whose value is not a mapping of documented keys."""
    missing = []
    for key, value in _mapping_pairs(node):
        path = f"{prefix}{key.value}"
        if _documented(lines, key):
            continue
        if isinstance(value, yaml.MappingNode) and value.value:
            missing.extend(_undocumented(lines, value, path + "."))
        else:
            missing.append(path)
    return missing


def test_every_value_is_documented() -> None:
    text = (chart.CHART / "values.yaml").read_text()
    assert _undocumented(text.splitlines(), yaml.compose(text), "") == []


def test_the_documentation_check_finds_an_undocumented_value() -> None:
    text = "---\nimage:\n  # -- Repository.\n  repository: x\n  tag: y\n"
    assert _undocumented(text.splitlines(), yaml.compose(text), "") == ["image.tag"]


def _schema_gaps(values: dict[str, Any], schema: dict[str, Any], prefix: str) -> list[str]:
    gaps = []
    properties = schema.get("properties", {})
    for name, value in values.items():
        if name not in properties:
            gaps.append(prefix + name)
        elif isinstance(value, dict) and "properties" in properties[name]:
            gaps.extend(_schema_gaps(value, properties[name], f"{prefix}{name}."))
    return gaps


def test_the_schema_names_every_value() -> None:
    with helm.Chart.load(chart.CHART) as loaded:
        assert loaded.schema is not None
        assert _schema_gaps(loaded.values, loaded.schema, "") == []
