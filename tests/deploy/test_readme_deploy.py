"""The README's deploy example, rendered with the chart as written: the pods run the image it
builds and pushes, the Secret it creates holds the key the Deployment reads, the pods may reach
the URL's port, and KEDA gets the TLS and the password the URL asks for."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.deploy import chart

ROOT = Path(__file__).resolve().parents[2]


def deploy_example() -> list[list[str]]:
    """The README's shell block that runs `helm install`, one argument list per command."""
    blocks = re.findall(r"^```sh\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    found = [block for block in blocks if "helm install" in block]
    assert len(found) == 1, "the README should have one deploy example"
    joined = found[0].replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


def command(commands: list[list[str]], *start: str) -> list[str]:
    matching = [words for words in commands if words[: len(start)] == list(start)]
    assert len(matching) == 1, f"one `{' '.join(start)}` command"
    return matching[0]


def option_values(words: list[str], option: str) -> list[str]:
    """Every value of `--option=value` or `--option value`."""
    values = []
    for index, word in enumerate(words):
        if word.startswith(f"{option}="):
            values.append(word.split("=", 1)[1])
        elif word == option:
            values.append(words[index + 1])
    return values


def helm_value(text: str) -> Any:
    """A `--set` value as Helm reads it: booleans, integers, `{a,b}` lists, else a string."""
    if text in ("true", "false"):
        return text == "true"
    if text.isdigit():
        return int(text)
    if text.startswith("{") and text.endswith("}"):
        return [helm_value(item) for item in text[1:-1].split(",")]
    return text


def helm_values(words: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for assignment in option_values(words, "--set"):
        path, value = assignment.split("=", 1)
        *parents, leaf = path.split(".")
        node = values
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = helm_value(value)
    return values


def test_the_readme_deploy_example_renders_a_worker_that_can_start_and_scale() -> None:
    commands = deploy_example()
    kubectl = command(commands, "kubectl", "create", "secret", "generic")
    secret_name = kubectl[4]
    literals = dict(item.split("=", 1) for item in option_values(kubectl, "--from-literal"))
    helm = command(commands, "helm", "install")
    values = helm_values(helm)
    documents = chart.documents(values)

    deployment = next(document for document in documents if document["kind"] == "Deployment")
    environment = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    url_source = next(item for item in environment if item["name"] == "THOUGHTLINE_REDIS_URL")
    reference = url_source["valueFrom"]["secretKeyRef"]
    assert reference["name"] == secret_name
    assert reference["key"] in literals, "the Deployment reads a key the Secret does not hold"
    url = urlsplit(literals[reference["key"]])

    # the cluster runs the image the example builds and pushes, not one only the builder has
    built = option_values(command(commands, "docker", "build"), "-t")
    assert command(commands, "docker", "push")[2:] == built
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] in built

    policy = next(document for document in documents if document["kind"] == "NetworkPolicy")
    open_ports = {port["port"] for rule in policy["spec"]["egress"] for port in rule["ports"]}
    assert url.port in open_ports, "the NetworkPolicy blocks the Redis port of the URL"

    scaled = next(document for document in documents if document["kind"] == "ScaledObject")
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["metadata"]["address"].rsplit(":", 1)[1] == str(url.port)
    assert trigger["metadata"]["enableTLS"] == str(url.scheme == "rediss").lower()
    if url.password:
        authentication = next(
            document for document in documents if document["kind"] == "TriggerAuthentication"
        )
        assert trigger["authenticationRef"]["name"] == authentication["metadata"]["name"]
        (password,) = authentication["spec"]["secretTargetRef"]
        assert password["parameter"] == "password"
        assert password["name"] == secret_name
        assert literals.get(password["key"]) == url.password
