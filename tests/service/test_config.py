"""Settings (docs/settings.md): exactly those variables and defaults; one-line errors
naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.worker.settings import (
    Settings,
    SettingsError,
    env_name,
    hash_tag,
    load_settings,
    settings_help,
    unknown_variable_warnings,
)

DOCUMENTED_DEFAULTS = {
    "THOUGHTLINE_REDIS_URL": None,
    "THOUGHTLINE_REDIS_CLUSTER": False,
    "THOUGHTLINE_INPUT_STREAM": "{thoughtline}:raw",
    "THOUGHTLINE_OUTPUT_STREAM": "{thoughtline}:normalized",
    "THOUGHTLINE_DEAD_STREAM": "{thoughtline}:dead",
    "THOUGHTLINE_DELTAS_STREAM": "{thoughtline}:deltas",
    "THOUGHTLINE_GROUP": "thoughtline",
    "THOUGHTLINE_BATCH_SIZE": 200,
    "THOUGHTLINE_BLOCK_MS": 1000,
    "THOUGHTLINE_MIN_IDLE_MS": 60000,
    "THOUGHTLINE_MAX_DELIVERIES": 5,
    "THOUGHTLINE_MAX_PAYLOAD_BYTES": 33554432,
    "THOUGHTLINE_METRICS_PORT": 9464,
    # Loopback outside a container; the image and the chart set 0.0.0.0.
    "THOUGHTLINE_METRICS_HOST": "127.0.0.1",
    "THOUGHTLINE_LOG_LEVEL": "INFO",
    # The conversation checks of request entries.
    "THOUGHTLINE_CONVERSATION_PREFIX": "{thoughtline}:conversation",
    "THOUGHTLINE_CONVERSATION_TTL_SECONDS": 86400,
    "THOUGHTLINE_REASONING_ONLY_LOOP_LIMIT": 3,
    # Live streams.
    "THOUGHTLINE_LIVE_IDLE_MS": 300000,
    "THOUGHTLINE_LIVE_TTL_SECONDS": 3600,
    "THOUGHTLINE_LIVE_MAX_STATE_BYTES": 8388608,
    "THOUGHTLINE_LIVE_MAX_CHUNK_BYTES": 1048576,
    "THOUGHTLINE_LIVE_PROMPT_REASONING_TABLE": True,
    # Partitions over a Redis Cluster's masters.
    "THOUGHTLINE_PARTITIONS": 1,
}


def test_every_setting_has_its_design_name_and_default() -> None:
    defaults = Settings()
    actual = {env_name(name): getattr(defaults, name) for name in Settings.model_fields}
    assert actual == DOCUMENTED_DEFAULTS


def test_the_settings_page_has_a_row_per_setting_with_its_default() -> None:
    documentation = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    for variable, default in DOCUMENTED_DEFAULTS.items():
        row = next(
            (line for line in documentation.splitlines() if line.startswith(f"| `{variable}` |")),
            None,
        )
        assert row is not None, f"docs/settings.md has no row for {variable}"
        if default is not None:
            assert str(default).lower() in row.lower(), f"docs/settings.md: {variable}: {default}"


def test_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOUGHTLINE_BATCH_SIZE", "50")
    monkeypatch.setenv("THOUGHTLINE_LOG_LEVEL", "debug")
    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", "rediss://:s3cret@cache.example:6380/2")
    settings = load_settings()
    assert (settings.batch_size, settings.log_level) == (50, "DEBUG")
    assert settings.redis_url == "rediss://:s3cret@cache.example:6380/2"
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("THOUGHTLINE_BATCH_SIZE", "many"),
        ("THOUGHTLINE_BATCH_SIZE", "0"),
        ("THOUGHTLINE_BLOCK_MS", "0"),
        ("THOUGHTLINE_MAX_DELIVERIES", "0"),
        ("THOUGHTLINE_METRICS_PORT", "70000"),
        ("THOUGHTLINE_LOG_LEVEL", "LOUD"),
        ("THOUGHTLINE_REDIS_URL", "http://localhost:6379"),
        ("THOUGHTLINE_REDIS_URL", ""),
        ("THOUGHTLINE_REDIS_URL", "  "),
        ("THOUGHTLINE_REDIS_URL", "redis://localhost:63x9/0"),
        ("THOUGHTLINE_REDIS_URL", "rediss://:pw@localhost:99999"),
        ("THOUGHTLINE_DEAD_STREAM", "dead-letters"),
        ("THOUGHTLINE_METRICS_HOST", ""),
    ],
)
def test_an_invalid_value_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert variable in message and "\n" not in message


def test_a_redis_password_is_never_repeated_in_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", "http://user:s3cret@host")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert "s3cret" not in str(caught.value)


def test_streams_must_share_one_hash_tag() -> None:
    with pytest.raises(SettingsError, match="THOUGHTLINE_OUTPUT_STREAM has hash tag"):
        load_settings(output_stream="{other}:normalized")
    renamed = load_settings(
        input_stream="{tl}:in",
        output_stream="{tl}:out",
        dead_stream="{tl}:dead",
        deltas_stream="{tl}:deltas",
    )
    assert renamed.stream_keys() == ("{tl}:in", "{tl}:out", "{tl}:dead", "{tl}:deltas")


@pytest.mark.parametrize(
    ("key", "tag"),
    [
        ("{thoughtline}:raw", "thoughtline"),
        ("a{b}c{d}", "b"),
        ("{}x", None),
        ("plain", None),
        ("x{y", None),
    ],
)
def test_hash_tag_follows_redis_cluster_rules(key: str, tag: str | None) -> None:
    assert hash_tag(key) == tag


def test_stream_names_must_be_distinct(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOUGHTLINE_INPUT_STREAM", "{t}:raw")
    monkeypatch.setenv("THOUGHTLINE_OUTPUT_STREAM", "{t}:out")
    monkeypatch.setenv("THOUGHTLINE_DEAD_STREAM", "{t}:raw")  # dead letters fed back: a loop
    monkeypatch.setenv("THOUGHTLINE_DELTAS_STREAM", "{t}:deltas")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert "THOUGHTLINE_INPUT_STREAM" in message and "THOUGHTLINE_DEAD_STREAM" in message
    assert "THOUGHTLINE_OUTPUT_STREAM" not in message


def test_an_empty_redis_url_is_an_error_not_an_embedded_redis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Set but empty is most likely a secret or template that rendered empty: starting an
    empty embedded Redis instead would look like a healthy worker that never sees an entry."""
    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", "")
    with pytest.raises(SettingsError, match="THOUGHTLINE_REDIS_URL: is set but empty"):
        load_settings()
    monkeypatch.delenv("THOUGHTLINE_REDIS_URL")
    assert load_settings().redis_url is None  # unset: the embedded Redis


def test_a_port_that_is_not_a_number_is_one_line_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", "redis://:s3cret@cache:port/0")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "THOUGHTLINE_REDIS_URL: the port in the URL is not a number" in message
    assert "s3cret" not in message and "\n" not in message
    assert load_settings(redis_url="unix:///run/redis.sock").redis_url == "unix:///run/redis.sock"


def test_a_misspelt_variable_is_one_warning_naming_the_closest_setting() -> None:
    environ = {
        "THOUGHTLINE_BATCHSIZE": "50",
        "thoughtline_redis_url": "redis://x",  # settings are read case-insensitively: known
        "THOUGHTLINE_MIN_IDLE": "100",
        "THOUGHTLINE_LOG_LEVEL": "DEBUG",
        "PATH": "/usr/bin",
    }
    warnings = unknown_variable_warnings(environ)
    assert warnings == [
        "warning: THOUGHTLINE_BATCHSIZE is not a Thoughtline setting and is ignored (the "
        "closest is THOUGHTLINE_BATCH_SIZE; `thoughtline serve --help` lists them all)",
        "warning: THOUGHTLINE_MIN_IDLE is not a Thoughtline setting and is ignored (the "
        "closest is THOUGHTLINE_MIN_IDLE_MS; `thoughtline serve --help` lists them all)",
    ]
    assert unknown_variable_warnings({"THOUGHTLINE_GROUP": "g"}) == []


def test_the_settings_help_lists_every_setting_with_its_default() -> None:
    lines = settings_help().splitlines()[1:]
    assert len(lines) == len(DOCUMENTED_DEFAULTS)
    for line, (variable, default) in zip(lines, DOCUMENTED_DEFAULTS.items(), strict=True):
        name, shown = line.split(maxsplit=1)
        assert name == variable
        expected = "(unset)" if default is None else str(default)
        assert shown == (expected.lower() if isinstance(default, bool) else expected)


def test_the_settings_page_lists_every_setting_with_its_default() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[2]
        for line in page.splitlines()
        if line.startswith("| `THOUGHTLINE_")
    }
    assert set(rows) == set(DOCUMENTED_DEFAULTS)
    for variable, default in DOCUMENTED_DEFAULTS.items():
        if default is not None:
            assert str(default).lower() in rows[variable].lower(), variable


@pytest.mark.parametrize(
    ("contradicting", "consistent", "named"),
    [
        (  # a quiet live stream's state would expire before the sweep closes it
            {"live_ttl_seconds": 5, "live_idle_ms": 20_000},
            {"live_ttl_seconds": 21, "live_idle_ms": 20_000},
            ("THOUGHTLINE_LIVE_TTL_SECONDS=5", "THOUGHTLINE_LIVE_IDLE_MS=20000"),
        ),
        (  # a worker waiting in its read would look dead to the others
            {"min_idle_ms": 1000, "block_ms": 1000},
            {"min_idle_ms": 1001, "block_ms": 1000},
            ("THOUGHTLINE_MIN_IDLE_MS=1000", "THOUGHTLINE_BLOCK_MS=1000"),
        ),
    ],
)
def test_settings_that_contradict_each_other_are_refused_in_one_line(
    contradicting: dict[str, int], consistent: dict[str, int], named: tuple[str, str]
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(**contradicting)
    message = str(caught.value)
    assert all(name in message for name in named) and "\n" not in message
    load_settings(**consistent)  # the edge on the right side is accepted
