"""The chart's optional OTLP export (`export.enabled`): a Deployment of its own running
`thoughtline export otlp` with the OTEL_EXPORTER_OTLP_* settings (headers from a Secret), the
content switches as the command's flags, pods no worker selector matches, and a NetworkPolicy
that lets them reach Redis, DNS and the collector only."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.deploy import chart
from thoughtline.cli.commands import build_parser
from thoughtline.export.command import switches_of
from thoughtline.export.mapping import ContentSwitches

EXPORT_NAME = f"{chart.FULLNAME}-export"


def _enabled(**export: Any) -> dict[str, Any]:
    return {"export": {"enabled": True, "otlp": {"endpoint": "http://collector:4318"}, **export}}


def _named(values: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found = [
        document
        for document in chart.documents(values)
        if document["kind"] == kind and document["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def _container(values: dict[str, Any]) -> dict[str, Any]:
    pod = _named(values, "Deployment", EXPORT_NAME)["spec"]["template"]["spec"]
    assert [container["name"] for container in pod["containers"]] == ["export"]
    container: dict[str, Any] = pod["containers"][0]
    return container


def _environment(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_export_is_off_by_default() -> None:
    names = [document["metadata"]["name"] for document in chart.documents(None)]
    assert EXPORT_NAME not in names
    assert chart.kinds(None).count("Deployment") == 1


def test_the_export_deployment_runs_the_command_with_the_otlp_settings() -> None:
    values = chart.VARIANTS["export"]
    deployment = _named(values, "Deployment", EXPORT_NAME)
    container = _container(values)
    environment = _environment(container)
    assert deployment["spec"]["replicas"] == 2
    assert container["command"] == ["thoughtline", "export", "otlp"]
    assert container["args"] == [
        "--group=thoughtline-otlp",
        "--batch-size=512",
        "--min-idle-ms=60000",
        "--metrics-port=9465",
        "--metrics-host=0.0.0.0",
        "--no-thinking",
    ]
    assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://otlp.example.com"
    assert environment["OTEL_EXPORTER_OTLP_HEADERS"] == {
        "secretKeyRef": {"name": "otlp-auth", "key": "headers"}
    }
    assert environment["OTEL_EXPORTER_OTLP_COMPRESSION"] == "gzip"
    assert environment["OTEL_SERVICE_NAME"] == "thoughtline"
    assert environment["THOUGHTLINE_REDIS_URL"] == {
        "secretKeyRef": {"name": f"{chart.FULLNAME}-redis", "key": "redis-url"}
    }
    assert container["envFrom"] == [{"configMapRef": {"name": chart.FULLNAME}}]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["resources"]["requests"] and container["resources"]["limits"]


def test_a_traces_endpoint_alone_is_enough_and_no_headers_means_none() -> None:
    values = {
        "export": {"enabled": True, "otlp": {"tracesEndpoint": "http://phoenix:6006/v1/traces"}}
    }
    environment = _environment(_container(values))
    assert environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://phoenix:6006/v1/traces"
    assert not {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"} & set(environment)


@pytest.mark.parametrize(
    "content",
    [
        {},
        {"messages": False},
        {"thinking": False},
        {"opaqueParts": False},
        {"messages": False, "thinking": False, "opaqueParts": False},
    ],
    ids=repr,
)
def test_the_content_switches_reach_the_command_as_it_reads_them(content: dict[str, bool]) -> None:
    """The rendered arguments parsed by the command's own parser give the switches asked for."""
    arguments = build_parser().parse_args(
        ["export", "otlp", *_container(_enabled(content=content))["args"]]
    )
    assert switches_of(arguments) == ContentSwitches(
        content=content.get("messages", True),
        thinking=content.get("thinking", True),
        opaque_parts=content.get("opaqueParts", True),
    )


def test_no_worker_selector_matches_the_export_pods() -> None:
    values = _enabled()
    documents = chart.documents(values)
    export_pod = _named(values, "Deployment", EXPORT_NAME)["spec"]["template"]["metadata"]
    worker = _named(values, "Deployment", chart.FULLNAME)
    worker_pod = worker["spec"]["template"]["metadata"]
    selectors = [worker["spec"]["selector"]["matchLabels"]]
    for document in documents:
        if document["kind"] == "Service":
            selectors.append(document["spec"]["selector"])
        if document["kind"] in {"PodDisruptionBudget"}:
            selectors.append(document["spec"]["selector"]["matchLabels"])
        if document["kind"] == "NetworkPolicy" and document["metadata"]["name"] == chart.FULLNAME:
            selectors.append(document["spec"]["podSelector"]["matchLabels"])
    assert len(selectors) == 4
    assert not any(_matches(selector, export_pod["labels"]) for selector in selectors)
    export_selector = _named(values, "Deployment", EXPORT_NAME)["spec"]["selector"]["matchLabels"]
    assert _matches(export_selector, export_pod["labels"])
    assert not _matches(export_selector, worker_pod["labels"])


@pytest.mark.parametrize(
    ("otlp", "ports", "expected"),
    [
        ({"endpoint": "http://collector:4318"}, [], [4318]),
        ({"endpoint": "https://cloud.langfuse.com/api/public/otel"}, [], [443]),
        ({"endpoint": "http://tempo"}, [], [80]),
        ({"endpoint": "http://a:1", "tracesEndpoint": "http://phoenix:6006/v1/traces"}, [], [6006]),
        ({"endpoint": "https://collector"}, [4317, 4318], [4317, 4318]),
    ],
)
def test_the_export_network_policy_opens_redis_dns_and_the_collector_only(
    otlp: dict[str, str], ports: list[int], expected: list[int]
) -> None:
    values = {"export": {"enabled": True, "otlp": otlp, "collectorPorts": ports}}
    policy = _named(values, "NetworkPolicy", EXPORT_NAME)["spec"]
    assert policy["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    opened = [sorted(port["port"] for port in rule["ports"]) for rule in policy["egress"]]
    assert opened == [[6379], expected, [53, 53]]


def test_the_collector_peers_narrow_the_export_egress() -> None:
    policy = _named(chart.VARIANTS["export"], "NetworkPolicy", EXPORT_NAME)["spec"]
    assert policy["egress"][1]["to"] == [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
    assert "to" not in policy["egress"][0]


def test_no_network_policy_for_the_export_when_policies_are_off() -> None:
    values = {**_enabled(), "networkPolicy": {"enabled": False}}
    assert "NetworkPolicy" not in chart.kinds(values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"export": {"enabled": True}}, r"export\.otlp\.endpoint"),
        (_enabled(metricsPort=0, serviceMonitor={"enabled": True}), r"export\.metricsPort"),
    ],
)
def test_what_the_export_cannot_run_with_fails_at_render(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        chart.render(values)


def test_the_export_pods_get_the_metrics_port_and_probes() -> None:
    container = _container(_enabled())
    assert container["ports"] == [{"name": "metrics", "containerPort": 9465, "protocol": "TCP"}]
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    assert liveness["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert readiness["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert liveness["periodSeconds"] == 10 and liveness["failureThreshold"] == 3
    assert readiness["initialDelaySeconds"] == 5
    arguments = build_parser().parse_args(["export", "otlp", *container["args"]])
    assert (arguments.metrics_port, arguments.metrics_host) == (9465, "0.0.0.0")


def test_the_export_service_monitor_scrapes_the_export_pods_metrics_port() -> None:
    """Service and ServiceMonitor of their own, as the workers have: the monitor selects the
    export's Service, which selects the export pods' `metrics` port (9465)."""
    values = chart.VARIANTS["export"]
    monitor = _named(values, "ServiceMonitor", EXPORT_NAME)
    service = _named(values, "Service", EXPORT_NAME)
    pod = _named(values, "Deployment", EXPORT_NAME)["spec"]["template"]["metadata"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert _matches(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [chart.NAMESPACE]}
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    assert _matches(service["spec"]["selector"], pod["labels"])
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9465, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert _container(values)["ports"][0]["name"] == "metrics"


def test_the_workers_and_the_exports_monitors_select_their_own_services_only() -> None:
    values = {**chart.VARIANTS["export"], "serviceMonitor": {"enabled": True}}
    monitors = {
        document["metadata"]["name"]: document["spec"]["selector"]["matchLabels"]
        for document in chart.documents(values)
        if document["kind"] == "ServiceMonitor"
    }
    services = {
        document["metadata"]["name"]: document["metadata"]["labels"]
        for document in chart.documents(values)
        if document["kind"] == "Service"
    }
    assert sorted(monitors) == sorted(services) == sorted([chart.FULLNAME, EXPORT_NAME])
    for monitor, selector in monitors.items():
        selected = [name for name, labels in services.items() if _matches(selector, labels)]
        assert selected == [monitor]


def test_the_export_service_monitor_is_off_unless_asked() -> None:
    """Neither the export's Service nor its ServiceMonitor without `export.serviceMonitor`;
    the workers' switch does not turn it on."""
    values = {**_enabled(), "serviceMonitor": {"enabled": True}}
    names = {(d["kind"], d["metadata"]["name"]) for d in chart.documents(values)}
    assert ("ServiceMonitor", EXPORT_NAME) not in names
    assert ("Service", EXPORT_NAME) not in names
    assert ("ServiceMonitor", chart.FULLNAME) in names


def test_metrics_port_zero_serves_nothing_and_probes_nothing() -> None:
    values = _enabled(metricsPort=0)
    container = _container(values)
    assert "--metrics-port=0" in container["args"]
    assert not {"ports", "livenessProbe", "readinessProbe"} & set(container)
    assert build_parser().parse_args(["export", "otlp", *container["args"]]).metrics_port == 0
    assert _named(values, "NetworkPolicy", EXPORT_NAME)["spec"]["ingress"] == []


def test_the_export_runs_with_several_partitions() -> None:
    values = {**_enabled(), "config": {"partitions": 4}}
    container = _container(values)
    assert container["command"] == ["thoughtline", "export", "otlp"]
    configmap = _named(values, "ConfigMap", chart.FULLNAME)
    assert configmap["data"]["THOUGHTLINE_PARTITIONS"] == "4"
    assert container["envFrom"] == [{"configMapRef": {"name": chart.FULLNAME}}]


@pytest.mark.parametrize(
    "export",
    [
        {"replicas": -1},
        {"metricsPort": 70000},
        {"livenessProbe": {"periodSeconds": 0}},
        {"batchSize": 0},
        {"otlp": {"compression": "zstd"}},
        {"otlp": {"endpoint": "collector:4318"}},
        {"collectorPorts": [0]},
        {"content": {"reasoning": False}},
        {"serviceMonitor": {"interval": "30 seconds"}},
        {"serviceMonitor": {"port": "metrics"}},
    ],
    ids=repr,
)
def test_the_schema_rejects_invalid_export_values(export: dict[str, Any]) -> None:
    with helm.Chart.load(chart.CHART) as loaded, pytest.raises(helm.HelmValuesError):
        loaded.validate_schema({"export": export})


def test_the_chart_s_export_defaults_are_the_command_s_own() -> None:
    """The chart's default export values, parsed by the command's own parser, give what the
    command takes with no option at all: its defaults are written in the export's settings,
    the chart's are a copy held to them."""
    from_chart = build_parser().parse_args(["export", "otlp", *_container(_enabled())["args"]])
    own = build_parser().parse_args(["export", "otlp"])
    assert vars(from_chart) == vars(own)
