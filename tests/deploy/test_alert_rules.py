"""The chart's alert rules, checked and unit-tested by Prometheus' own `promtool`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy import chart

CASES = Path(__file__).parent / "promtool" / "alerts_test.yaml"
RULES_FILE = "thoughtline.rules.yaml"


def _promtool() -> str:
    promtool = chart.tool("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return promtool


def rendered_rules(values: dict[str, Any] | None = None) -> dict[str, Any]:
    """The PrometheusRule's spec: a plain Prometheus rules file."""
    rule = chart.only({"prometheusRule": {"enabled": True, **(values or {})}}, "PrometheusRule")
    spec: dict[str, Any] = rule["spec"]
    return spec


def _alert_names(rules: dict[str, Any]) -> set[str]:
    return {rule["alert"] for group in rules["groups"] for rule in group["rules"]}


def _run_cases(rules: dict[str, Any], directory: Path) -> tuple[int, str]:
    (directory / RULES_FILE).write_text(yaml.safe_dump(rules, sort_keys=False))
    shutil.copy(CASES, directory / CASES.name)
    result = chart.run([_promtool(), "test", "rules", CASES.name], cwd=directory)
    return result.returncode, result.stdout + result.stderr


def test_the_rules_pass_promtool_check(tmp_path: Path) -> None:
    rules_file = tmp_path / RULES_FILE
    rules_file.write_text(yaml.safe_dump(rendered_rules()))
    result = chart.run([_promtool(), "check", "rules", str(rules_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_the_alerts_fire_on_their_series_and_stay_quiet_otherwise(tmp_path: Path) -> None:
    status, output = _run_cases(rendered_rules(), tmp_path)
    assert status == 0, output
    assert "SUCCESS" in output


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases = yaml.safe_load(CASES.read_text())
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in cases["tests"]:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    alerts = _alert_names(rendered_rules())
    assert alerts == {
        "ThoughtlineStreamLagGrowing",
        "ThoughtlineDeadLetters",
        "ThoughtlineLeakedThoughtRateHigh",
        "ThoughtlineNoProgress",
    }
    assert firing == alerts and quiet == alerts


@pytest.mark.parametrize(
    "values",
    [
        {"lagThreshold": 5000},
        {"leakedThoughtRatio": 0.2},
        {"for": "30m"},
    ],
)
def test_the_cases_notice_a_changed_threshold(values: dict[str, Any], tmp_path: Path) -> None:
    """The promtool cases are tight: other thresholds make them fail."""
    status, output = _run_cases(rendered_rules(values), tmp_path)
    assert status != 0, output


def test_alert_labels_are_added_to_every_alert() -> None:
    rules = rendered_rules({"alertLabels": {"team": "llm-platform"}})
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["team"] == "llm-platform"
            assert rule["labels"]["severity"] in {"warning", "critical"}
