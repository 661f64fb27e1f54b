"""The Grafana dashboard: every metric of metrics.py is on it, every query parses, it ships."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

import thoughtline.worker
from tests.deploy import chart


def series_from_metrics_module() -> list[str]:
    """The series a dashboard must query for each metric thoughtline.worker.metrics defines.

    Metrics are found as module-level collectors, or on the registry of a fresh
    `thoughtline.worker.metrics.Metrics()` (the service keeps one registry per worker). Counters are
    queried as `<name>_total`, histograms through `<name>_bucket` (quantiles). The module is
    imported here, not at the top, so a test can put another one in its place.
    """
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics import MetricWrapperBase
    from prometheus_client.metrics_core import Metric

    from thoughtline.worker import metrics

    families: list[Metric] = []
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            families.extend(value.describe())
    metrics_class = getattr(metrics, "Metrics", None)
    if isinstance(metrics_class, type):
        registry = CollectorRegistry()
        metrics_class(registry=registry)
        families.extend(registry.collect())
    suffixes = {"counter": "_total", "histogram": "_bucket"}
    return sorted({family.name + suffixes.get(family.type, "") for family in families})


def missing_series(series: list[str], board: dict[str, Any]) -> list[str]:
    expressions = " ".join(expression for _, expression in chart.panel_queries(board))
    return [name for name in series if not re.search(rf"\b{re.escape(name)}\b", expressions)]


def test_every_metric_in_metrics_py_is_on_the_dashboard() -> None:
    assert missing_series(series_from_metrics_module(), chart.dashboard()) == []


def test_the_coverage_check_notices_a_missing_metric() -> None:
    board = chart.dashboard()
    for panel in board["panels"]:
        panel["targets"] = [
            target
            for target in panel.get("targets", [])
            if "thoughtline_reclaimed_total" not in target["expr"]
        ]
    assert missing_series(series_from_metrics_module(), board) == ["thoughtline_reclaimed_total"]


def test_module_level_metrics_are_found_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

    registry = CollectorRegistry()
    module = types.ModuleType("thoughtline.worker.metrics")
    module.__dict__["RECORDS"] = Counter(
        "thoughtline_records_total", "", ["format"], registry=registry
    )
    module.__dict__["LAG"] = Gauge("thoughtline_stream_lag", "", registry=registry)
    module.__dict__["LATENCY"] = Histogram("thoughtline_normalize_seconds", "", registry=registry)
    module.__dict__["NEW"] = Counter("thoughtline_brand_new", "", registry=registry)
    monkeypatch.setitem(sys.modules, "thoughtline.worker.metrics", module)
    monkeypatch.setattr(thoughtline.worker, "metrics", module, raising=False)
    series = series_from_metrics_module()
    assert series == [
        "thoughtline_brand_new_total",
        "thoughtline_normalize_seconds_bucket",
        "thoughtline_records_total",
        "thoughtline_stream_lag",
    ]
    assert missing_series(series, chart.dashboard()) == ["thoughtline_brand_new_total"]


@pytest.mark.parametrize(
    ("needle", "meaning"),
    [
        (
            "sum by (format, outcome) (rate(thoughtline_records_total",
            "records/s by format, outcome",
        ),
        ("sum by (format, code) (rate(thoughtline_leaked_thought_total", "leaked by format, code"),
        (
            "sum by (dialect, code) (rate(thoughtline_leaked_thought_total",
            "leaks by dialect",
        ),
        (
            "sum by (format, code) (rate(thoughtline_malformed_parts_total",
            "malformed by format, code",
        ),
        ("sum by (reason) (rate(thoughtline_dead_letters_total", "dead letters by reason"),
        ("histogram_quantile(0.5, sum by (le) (rate(thoughtline_normalize_seconds_bucket", "p50"),
        ("histogram_quantile(0.95, sum by (le) (rate(thoughtline_normalize_seconds_bucket", "p95"),
        ("histogram_quantile(0.99, sum by (le) (rate(thoughtline_normalize_seconds_bucket", "p99"),
        ("max(thoughtline_stream_lag", "stream lag"),
        ("rate(thoughtline_reclaimed_total", "reclaims"),
    ],
)
def test_the_dashboard_has_the_panels_operators_need(needle: str, meaning: str) -> None:
    expressions = [expression for _, expression in chart.panel_queries(chart.dashboard())]
    assert any(needle in expression for expression in expressions), meaning


def test_every_panel_query_parses(tmp_path: Path) -> None:
    """promtool parses each expression as a recording rule: PromQL syntax checked offline."""
    promtool = chart.tool("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    queries = chart.panel_queries(chart.dashboard())
    rules = [
        {"record": f"dashboard:query_{index}", "expr": chart.substitute_variables(expression)}
        for index, (_, expression) in enumerate(queries)
    ]
    rules_file = tmp_path / "dashboard.rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = chart.run([promtool, "check", "rules", str(rules_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    panels = chart.dashboard()["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, f"{panel['title']} overlaps another panel"
        cells |= area


def test_every_query_uses_the_chosen_data_source_and_namespace() -> None:
    board = chart.dashboard()
    variables = {variable["name"] for variable in board["templating"]["list"]}
    assert variables == {"datasource", "namespace"}
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            assert 'namespace=~"$namespace"' in target["expr"], panel["title"]


def test_the_dashboard_ships_in_a_labelled_config_map() -> None:
    values = chart.VARIANTS["keda-servicemonitor"]
    config_maps = [
        document
        for document in chart.documents(values)
        if document["kind"] == "ConfigMap" and "thoughtline.json" in document["data"]
    ]
    assert len(config_maps) == 1
    config_map = config_maps[0]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert json.loads(config_map["data"]["thoughtline.json"]) == chart.dashboard()


def panels_by_row(board: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The panels under each row, as Grafana lays them out: a panel belongs to the last row
    above it."""
    rows: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] = []
    for panel in sorted(board["panels"], key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"])):
        if panel["type"] == "row":
            current = rows.setdefault(panel["title"], [])
        else:
            current.append(panel)
    return rows


def test_each_panel_sits_in_the_row_of_its_metrics() -> None:
    misplaced = []
    for row, panels in panels_by_row(chart.dashboard()).items():
        for panel in panels:
            expressions = " ".join(target["expr"] for target in panel.get("targets", []))
            faststream = "faststream_" in expressions
            live = "thoughtline_live_" in expressions
            if faststream != (row == "FastStream") or live != (row == "Live streams"):
                misplaced.append(f"{panel['title']} (in {row})")
    assert misplaced == []


def test_the_operate_page_describes_every_row() -> None:
    page = (chart.ROOT / "docs" / "operate.md").read_text()
    section = page.split("## Dashboard", 1)[1].split("\n## ", 1)[0]
    described = re.findall(r"^- \*\*(.+?):\*\*", section, re.M)
    assert described == list(panels_by_row(chart.dashboard()))
