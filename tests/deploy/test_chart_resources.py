"""What the chart renders: the worker Deployment, its Secret and settings, autoscaling, policies."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.deploy import chart
from thoughtline.worker import settings as config


def _settings_variables() -> set[str]:
    """Every worker setting's environment variable (docs/settings.md)."""
    return {config.env_name(name) for name in config.Settings.model_fields}


def _container(values: dict[str, Any] | None = None) -> dict[str, Any]:
    containers = chart.only(values, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "one worker per pod"
    container: dict[str, Any] = containers[0]
    return container


def test_the_deployment_runs_one_hardened_worker_per_pod() -> None:
    deployment = chart.only(None, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = _container()
    assert deployment["spec"]["replicas"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["ports"] == [{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}]


def test_every_worker_setting_reaches_the_container() -> None:
    config_map = chart.only(None, "ConfigMap")
    environment = set(config_map["data"]) | {item["name"] for item in _container()["env"]}
    assert _settings_variables() <= environment


CHART_OWN_DEFAULTS: dict[str, str] = {
    "metrics_host": "the pod's port is scraped from outside it: all interfaces, not loopback",
}
"""Settings whose chart default differs from the worker's, with the reason."""


def test_the_config_map_carries_the_default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart's default values, read by the worker as its environment, are the settings
    module's defaults (the one place they are written): a value the chart renders so that
    the worker cannot read it (a large number in Helm's float notation) fails here too."""
    data = chart.only(None, "ConfigMap")["data"]
    for variable, value in data.items():
        monkeypatch.setenv(variable, value)
    read = config.Settings()
    differing = {
        name: (getattr(read, name), field.default)
        for name, field in config.Settings.model_fields.items()
        if name != "redis_url" and getattr(read, name) != field.default
    }
    assert sorted(differing) == sorted(CHART_OWN_DEFAULTS)


LARGE: dict[str, int] = {
    "batchSize": 100_000,
    "blockMs": 1_000_000,
    "minIdleMs": 1_800_000,
    "maxDeliveries": 1_000_000,
    "maxPayloadBytes": 67_108_864,
    "conversationTtlSeconds": 2_592_000,
    "reasoningOnlyLoopLimit": 1_000_000,
    "liveIdleMs": 3_600_000,
    "liveTtlSeconds": 2_592_000,
    "liveMaxStateBytes": 16_777_216,
    "liveMaxChunkBytes": 4_194_304,
}
"""A value of a million or more for each integer setting: Helm reads values as floats, and
a float of a million or more prints in exponent notation unless turned into an integer."""


def test_large_integer_settings_reach_the_worker_as_integers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = chart.only({"config": LARGE}, "ConfigMap")["data"]
    for variable, value in data.items():
        monkeypatch.setenv(variable, value)
    read = config.Settings()
    for key, value in LARGE.items():
        name = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
        assert getattr(read, name) == value, key


def test_large_integer_export_options_are_written_as_integers() -> None:
    values = {
        "export": {
            "enabled": True,
            "otlp": {"endpoint": "http://collector:4318"},
            "batchSize": 1_000_000,
            "minIdleMs": 1_800_000,
        }
    }
    deployments = [
        document
        for document in chart.documents(values)
        if document["kind"] == "Deployment" and document["metadata"]["name"].endswith("export")
    ]
    arguments = deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--batch-size=1000000" in arguments
    assert "--min-idle-ms=1800000" in arguments


def _pod_annotations(values: dict[str, Any]) -> dict[str, str]:
    annotations: dict[str, str] = chart.only(values, "Deployment")["spec"]["template"]["metadata"][
        "annotations"
    ]
    return annotations


def test_a_settings_change_rolls_the_pods() -> None:
    before = _pod_annotations({})
    after = _pod_annotations({"config": {"batchSize": 50}})
    assert before["checksum/config"] != after["checksum/config"]
    assert before["checksum/secret"] == after["checksum/secret"]
    moved = _pod_annotations({"redis": {"url": "redis://other:6379/0"}})
    assert before["checksum/secret"] != moved["checksum/secret"]


def test_the_redis_url_comes_from_a_chart_secret_by_default() -> None:
    secret = chart.only(None, "Secret")
    variable = _container()["env"][0]
    assert secret["stringData"] == {"redis-url": "redis://redis:6379/0"}
    assert variable["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "redis-url",
    }


def test_an_existing_secret_replaces_the_chart_secret() -> None:
    values = {"redis": {"existingSecret": "shared-redis", "existingSecretKey": "url"}}
    assert "Secret" not in chart.kinds(values)
    variable = _container(values)["env"][0]
    assert variable["name"] == "THOUGHTLINE_REDIS_URL"
    assert variable["valueFrom"]["secretKeyRef"] == {"name": "shared-redis", "key": "url"}


def test_optional_resources_render_only_when_enabled() -> None:
    assert chart.kinds(None) == [
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Secret",
        "Service",
        "ServiceAccount",
    ]
    enabled = chart.kinds(chart.VARIANTS["keda-servicemonitor"])
    for kind in ("ScaledObject", "TriggerAuthentication", "ServiceMonitor", "PrometheusRule"):
        assert kind in enabled
    assert "HorizontalPodAutoscaler" not in enabled


def _trigger(values: dict[str, Any]) -> dict[str, Any]:
    scaled = chart.only(
        {"keda": {"enabled": True, **values.pop("keda", {})}, **values}, "ScaledObject"
    )
    assert len(scaled["spec"]["triggers"]) == 1
    trigger: dict[str, Any] = scaled["spec"]["triggers"][0]
    return trigger


def test_keda_scales_on_the_consumer_group_lag() -> None:
    scaled = chart.only({"keda": {"enabled": True}}, "ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == chart.FULLNAME
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "redis-streams"
    assert trigger["metadata"] == {
        "address": "redis:6379",
        "databaseIndex": "0",
        "stream": "{thoughtline}:raw",
        "consumerGroup": "thoughtline",
        "lagCount": "500",
        "activationLagCount": "0",
        "enableTLS": "false",
    }
    assert "authenticationRef" not in trigger
    assert "replicas" not in chart.only({"keda": {"enabled": True}}, "Deployment")["spec"]


def test_keda_reads_host_database_and_tls_from_the_redis_url() -> None:
    trigger = _trigger({"redis": {"url": "rediss://:secret@cache.internal:6380/3"}})
    assert trigger["metadata"]["address"] == "cache.internal:6380"
    assert trigger["metadata"]["databaseIndex"] == "3"
    assert trigger["metadata"]["enableTLS"] == "true"
    assert "secret" not in str(trigger)


def test_keda_needs_an_address_with_an_existing_secret() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"keda\.address"):
        chart.render({"keda": {"enabled": True}, "redis": {"existingSecret": "shared"}})
    trigger = _trigger(
        {"keda": {"address": "redis-master:6379"}, "redis": {"existingSecret": "shared"}}
    )
    assert trigger["metadata"]["address"] == "redis-master:6379"


def test_keda_on_a_redis_cluster_uses_the_cluster_trigger() -> None:
    trigger = _trigger({"keda": {"cluster": True, "address": "node-0:6379,node-1:6379"}})
    assert trigger["type"] == "redis-cluster-streams"
    assert trigger["metadata"]["addresses"] == "node-0:6379,node-1:6379"
    assert "address" not in trigger["metadata"] and "databaseIndex" not in trigger["metadata"]


def test_keda_with_partitions_scales_on_the_summed_lag_from_prometheus() -> None:
    """The partitions' stream names are computed by the workers, so KEDA cannot name them:
    it reads the lag every worker reports summed over the partitions."""
    values = {"config": {"partitions": 6}}
    with pytest.raises(helm.HelmRenderError, match=r"keda\.prometheus\.serverAddress"):
        chart.render({**values, "keda": {"enabled": True}})
    trigger = _trigger({**values, "keda": {"prometheus": {"serverAddress": "http://prom:9090"}}})
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["serverAddress"] == "http://prom:9090"
    assert trigger["metadata"]["query"].startswith("max(thoughtline_stream_lag{namespace=")
    assert trigger["metadata"]["threshold"] == "500"
    assert chart.only(values, "ConfigMap")["data"]["THOUGHTLINE_PARTITIONS"] == "6"


def test_large_keda_counts_are_written_as_integers() -> None:
    """KEDA reads `lagCount` and `activationLagCount` as integers: a million was written
    `1e+06` (Helm reads values as floats), which KEDA refuses. Prometheus's thresholds too,
    and the ScaledObject's own counts."""
    keda = {
        "lagCount": 1_000_000,
        "activationLagCount": 2_000_000,
        "maxReplicaCount": 1_000_000,
        "pollingInterval": 1_000_000,
        "cooldownPeriod": 1_000_000,
    }
    scaled = chart.only({"keda": {"enabled": True, **keda}}, "ScaledObject")
    metadata = scaled["spec"]["triggers"][0]["metadata"]
    assert (metadata["lagCount"], metadata["activationLagCount"]) == ("1000000", "2000000")
    for key in ("maxReplicaCount", "pollingInterval", "cooldownPeriod"):
        assert scaled["spec"][key] == 1_000_000, key
    trigger = _trigger(
        {
            "config": {"partitions": 2},
            "keda": {"prometheus": {"serverAddress": "http://prom:9090"}, **keda},
        }
    )
    assert (trigger["metadata"]["threshold"], trigger["metadata"]["activationThreshold"]) == (
        "1000000",
        "2000000",
    )


def test_keda_authenticates_with_a_password_secret() -> None:
    values = {"keda": {"enabled": True, "passwordSecret": {"name": "auth", "key": "pw"}}}
    authentication = chart.only(values, "TriggerAuthentication")
    assert authentication["spec"]["secretTargetRef"] == [
        {"parameter": "password", "name": "auth", "key": "pw"}
    ]
    trigger = chart.only(values, "ScaledObject")["spec"]["triggers"][0]
    assert trigger["authenticationRef"] == {"name": authentication["metadata"]["name"]}
    existing = _trigger({"keda": {"authenticationRef": "shared-auth"}})
    assert existing["authenticationRef"] == {"name": "shared-auth"}


def test_keda_and_the_hpa_exclude_each_other() -> None:
    with pytest.raises(helm.HelmRenderError, match="enable one"):
        chart.render({"keda": {"enabled": True}, "autoscaling": {"enabled": True}})


def test_the_hpa_scales_on_cpu_or_on_given_metrics() -> None:
    hpa = chart.only({"autoscaling": {"enabled": True}}, "HorizontalPodAutoscaler")
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    lag = {
        "type": "External",
        "external": {
            "metric": {"name": "thoughtline_stream_lag"},
            "target": {"type": "AverageValue", "averageValue": "500"},
        },
    }
    custom = chart.only(
        {"autoscaling": {"enabled": True, "metrics": [lag]}}, "HorizontalPodAutoscaler"
    )
    assert custom["spec"]["metrics"] == [lag]
    assert "replicas" not in chart.only({"autoscaling": {"enabled": True}}, "Deployment")["spec"]


@pytest.mark.parametrize(
    ("streams", "message"),
    [
        ({"inputStream": "thoughtline:raw"}, "no {hash tag}"),
        ({"deadStream": "{other}:dead"}, "config.deadStream"),
        ({"deltasStream": "thoughtline:deltas"}, "config.deltasStream"),
    ],
)
def test_streams_must_share_one_hash_tag(streams: dict[str, str], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        chart.render({"config": streams})


def test_renamed_streams_with_a_common_tag_render() -> None:
    names = {
        "inputStream": "{llm-a}:raw",
        "outputStream": "{llm-a}:out",
        "deadStream": "{llm-a}:dead",
        "deltasStream": "{llm-a}:deltas",
    }
    assert chart.only({"config": names}, "ConfigMap")["data"]["THOUGHTLINE_DEAD_STREAM"] == (
        "{llm-a}:dead"
    )


def test_the_network_policy_opens_metrics_in_and_redis_and_dns_out() -> None:
    policy = chart.only(None, "NetworkPolicy")["spec"]
    assert policy["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    assert policy["egress"][0] == {"ports": [{"port": 6379, "protocol": "TCP"}]}
    assert {port["port"] for port in policy["egress"][1]["ports"]} == {53}
    narrowed = chart.only(chart.VARIANTS["hpa-existing-secret"], "NetworkPolicy")["spec"]
    assert narrowed["ingress"][0]["from"] and narrowed["egress"][0]["to"]


def test_the_service_monitor_scrapes_the_metrics_port() -> None:
    monitor = chart.only(chart.VARIANTS["keda-servicemonitor"], "ServiceMonitor")
    service = chart.only(None, "Service")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def test_the_image_is_pinned_by_digest_when_given() -> None:
    assert _container()["image"] == "thoughtline:0.1.0"
    pinned = _container(chart.VARIANTS["hpa-existing-secret"])["image"]
    assert pinned == "thoughtline@sha256:" + "0" * 64


def test_large_replica_counts_are_written_as_integers() -> None:
    """Helm reads numbers as floats, and a float of a million or more is written `1e+06`,
    which Kubernetes refuses as a replica count: every count the chart writes goes through
    `int64`."""
    big = 1_000_000
    worker = chart.only({"replicaCount": big, "terminationGracePeriodSeconds": big}, "Deployment")
    assert worker["spec"]["replicas"] == big
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == big
    scaler = chart.only(
        {"autoscaling": {"enabled": True, "minReplicas": big, "maxReplicas": 2 * big}},
        "HorizontalPodAutoscaler",
    )
    assert (scaler["spec"]["minReplicas"], scaler["spec"]["maxReplicas"]) == (big, 2 * big)
