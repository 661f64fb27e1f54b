"""Settings (DESIGN §5): exactly those variables and defaults; one-line errors naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import Settings, SettingsError, env_name, hash_tag, load_settings

DESIGN_DEFAULTS = {
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
    "THOUGHTLINE_LOG_LEVEL": "INFO",
    # Beyond DESIGN §5: the conversation checks of request entries (issue 6).
    "THOUGHTLINE_CONVERSATION_PREFIX": "{thoughtline}:conversation",
    "THOUGHTLINE_CONVERSATION_TTL_SECONDS": 86400,
    "THOUGHTLINE_REASONING_ONLY_LOOP_LIMIT": 3,
}


def test_every_setting_has_its_design_name_and_default() -> None:
    defaults = Settings()
    actual = {env_name(name): getattr(defaults, name) for name in Settings.model_fields}
    assert actual == DESIGN_DEFAULTS


def test_the_service_documentation_lists_every_setting_with_its_default() -> None:
    documentation = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text()
    for variable, default in DESIGN_DEFAULTS.items():
        row = next(
            (line for line in documentation.splitlines() if line.startswith(f"| `{variable}` |")),
            None,
        )
        assert row is not None, f"docs/service.md has no row for {variable}"
        if default is not None:
            assert str(default).lower() in row.lower(), f"docs/service.md: {variable}: {default}"


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
        ("THOUGHTLINE_DEAD_STREAM", "dead-letters"),
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
