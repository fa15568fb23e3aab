"""A local Ollama and Ollama Cloud in one process: ``ollama:`` and ``ollama-cloud:``.

Two fake Ollama servers on 127.0.0.1 stand in for the two hosts (the cloud one refuses a call
without its key, as ollama.com does); each model string must reach its own host with its own
key, and no key may reach the op log or the logs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from agentlake.errors import UserError
from agentlake.llm import ScriptedProvider, generate, get_provider
from agentlake.llm.fakeserver import serve_fake_ollama
from agentlake.llm.inventory import model_statuses
from agentlake.observe import MemorySink, Observer, install_llm_recording
from agentlake.settings import load_settings

CLOUD_KEY = "cloud-key-0123456789abcdef"
LOCAL_KEY = "local-key-0123456789abcdef"


class Hosts(NamedTuple):
    local: ScriptedProvider
    cloud: ScriptedProvider


@pytest.fixture
def hosts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hosts]:
    """A local Ollama (no key) at OLLAMA_HOST and a hosted one, keyed, at the cloud host setting."""
    local = ScriptedProvider("qwen3:4b", context_window=40960)
    cloud = ScriptedProvider("gpt-oss:120b", context_window=131072)
    with serve_fake_ollama(local) as local_url, serve_fake_ollama(cloud, api_key=CLOUD_KEY) as cloud_url:
        monkeypatch.setenv("OLLAMA_HOST", local_url)
        monkeypatch.setenv("AGENTLAKE_OLLAMA_CLOUD_HOST", cloud_url)
        monkeypatch.setenv("OLLAMA_CLOUD_KEY", CLOUD_KEY)
        yield Hosts(local, cloud)


def _both(hosts: Hosts) -> None:
    hosts.local.enqueue("from the local host")
    hosts.cloud.enqueue("from the cloud")
    generate("ollama:qwen3:4b", "hi")
    generate("ollama-cloud:gpt-oss:120b", "hi")


def test_an_ollama_model_goes_to_the_local_host(hosts: Hosts) -> None:
    hosts.local.enqueue("from the local host")
    assert generate("ollama:qwen3:4b", "hi").text == "from the local host"


def test_an_ollama_cloud_model_goes_to_the_cloud_host(hosts: Hosts) -> None:
    hosts.cloud.enqueue("from the cloud")
    assert generate("ollama-cloud:gpt-oss:120b", "hi").text == "from the cloud"


def test_each_host_is_asked_only_about_its_own_model(hosts: Hosts) -> None:
    _both(hosts)
    assert (
        [b["model"] for b in hosts.local.raw_requests],
        [b["model"] for b in hosts.cloud.raw_requests],
    ) == (
        ["qwen3:4b"],
        ["gpt-oss:120b"],
    )


def test_the_cloud_key_goes_to_the_cloud_only(hosts: Hosts) -> None:
    _both(hosts)
    assert (hosts.local.raw_authorizations, hosts.cloud.raw_authorizations) == (
        [None],
        [f"Bearer {CLOUD_KEY}"],
    )


def test_ollamas_own_variable_is_the_clouds_key_too(hosts: Hosts, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_CLOUD_KEY")
    monkeypatch.setenv("OLLAMA_API_KEY", CLOUD_KEY)
    _both(hosts)
    assert (hosts.local.raw_authorizations, hosts.cloud.raw_authorizations) == (
        [None],
        [f"Bearer {CLOUD_KEY}"],
    )


def test_a_local_key_goes_to_the_local_host_only(hosts: Hosts, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_OLLAMA_API_KEY", LOCAL_KEY)
    _both(hosts)
    assert (hosts.local.raw_authorizations, hosts.cloud.raw_authorizations) == (
        [f"Bearer {LOCAL_KEY}"],
        [f"Bearer {CLOUD_KEY}"],
    )


def test_the_cloud_context_window_is_the_cloud_servers(hosts: Hosts) -> None:
    assert get_provider("ollama-cloud:gpt-oss:120b").capabilities.context_window == 131072


def test_completions_name_the_cloud_provider(hosts: Hosts) -> None:
    hosts.cloud.enqueue("from the cloud")
    assert generate("ollama-cloud:gpt-oss:120b", "hi").provider == "ollama-cloud"


def test_no_cloud_key_says_which_variables_set_it(hosts: Hosts, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_CLOUD_KEY")
    with pytest.raises(
        UserError, match=r"^ollama-cloud: needs a key for http://127\.0\.0\.1:\d+: set OLLAMA_CLOUD_KEY"
    ):
        generate("ollama-cloud:gpt-oss:120b", "hi")


def test_a_refused_cloud_key_names_the_cloud_model_and_the_variables(
    hosts: Hosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_CLOUD_KEY", "wrong-key-0123456789")
    with pytest.raises(
        UserError, match=r"^ollama-cloud:gpt-oss:120b at http://127\.0\.0\.1:\d+ refused .*OLLAMA_CLOUD_KEY"
    ):
        generate("ollama-cloud:gpt-oss:120b", "hi")


def test_no_key_reaches_the_op_log_or_the_logs(
    hosts: Hosts, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTLAKE_OLLAMA_API_KEY", LOCAL_KEY)
    observer = Observer(MemorySink(), ring_size=100)
    uninstall = install_llm_recording(observer)
    caplog.set_level(logging.DEBUG)
    try:
        _both(hosts)
        monkeypatch.setenv("OLLAMA_CLOUD_KEY", f"wrong-{CLOUD_KEY}")  # a refused call is recorded too
        with pytest.raises(UserError):
            generate("ollama-cloud:gpt-oss:120b", "hi")
    finally:
        uninstall()
    recorded = " ".join(op.model_dump_json() for op in observer.query(limit=100)) + caplog.text
    assert [key for key in (CLOUD_KEY, LOCAL_KEY) if key in recorded] == []


def test_the_recorded_ops_name_each_host_s_provider(hosts: Hosts) -> None:
    observer = Observer(MemorySink(), ring_size=100)
    uninstall = install_llm_recording(observer)
    try:
        _both(hosts)
    finally:
        uninstall()
    assert sorted(op.usage.provider for op in observer.query(limit=100)) == ["ollama", "ollama-cloud"]


def test_agentlake_models_lists_a_configured_cloud_model_on_the_cloud(
    hosts: Hosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_OVERSEER_MODEL", "ollama-cloud:gpt-oss:120b")
    (row,) = [s for s in model_statuses(load_settings()) if s.model == "ollama-cloud:gpt-oss:120b"]
    assert (row.reachable, row.context_window, row.roles) == (True, 131072, ["overseer"])
