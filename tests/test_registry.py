"""The one registry shape of every extension point: one door, built-ins on first use, entry points."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentlake.agents.policy import policies
from agentlake.embed.embedder import embedders
from agentlake.errors import RunError, UserError
from agentlake.graph.node import node_types
from agentlake.learn.extractor import extractors
from agentlake.llm.provider import providers
from agentlake.registry import Registry


def _install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str, points: dict[str, str], code: str
) -> None:
    """An installed distribution on sys.path declaring ``points`` in ``group``, with module ``thirdparty``."""
    (tmp_path / "thirdparty.py").write_text(code)
    info = tmp_path / "thirdparty-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "thirdparty", raising=False)


@pytest.mark.parametrize(
    ("registry", "group"),
    [
        (providers, "agentlake.providers"),
        (embedders, "agentlake.embedders"),
        (policies, "agentlake.policies"),
        (extractors, "agentlake.extractors"),
        (node_types, "agentlake.graph_nodes"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.kind,
)
def test_every_extension_point_is_one_registry_shape(registry: Registry, group: str) -> None:
    assert isinstance(registry, Registry)
    assert registry.group == group


def test_a_third_partys_entry_point_is_found_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(
        tmp_path,
        monkeypatch,
        "agentlake.test_things",
        {"shiny": "thirdparty:make"},
        "def make():\n    return 42\n",
    )
    things: Registry[object] = Registry("thing", "agentlake.test_things")
    assert "shiny" in things.names()
    assert things.get("shiny")() == 42


def test_a_broken_plugin_is_named_not_taken_for_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, monkeypatch, "agentlake.test_things", {"broken": "thirdparty:missing"}, "x = 1\n")
    things: Registry[object] = Registry("thing", "agentlake.test_things")
    with pytest.raises(RunError, match="thing plugin 'broken' .*failed to load"):
        things.get("broken")


def test_a_built_in_loads_on_first_use_through_the_same_door(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    things: Registry[object] = Registry("thing", "agentlake.test_things", builtins={"lazy": "thirdparty"})
    monkeypatch.setitem(sys.modules, "agentlake_test_things", things)
    code = (
        "import agentlake_test_things\nagentlake_test_things.register('lazy', 'from the built-in module')\n"
    )
    _install(tmp_path, monkeypatch, "agentlake.other_things", {}, code)
    assert "thirdparty" not in sys.modules
    assert things.get("lazy") == "from the built-in module"


def test_a_name_is_registered_once_unless_replaced() -> None:
    things: Registry[str] = Registry("thing", "agentlake.test_things")
    things.register("one", "first")
    with pytest.raises(UserError, match="thing 'one' is already registered"):
        things.register("one", "second")
    things.register("one", "second", replace=True)
    assert things.get("one") == "second"


def test_an_unknown_name_lists_the_known_ones() -> None:
    things: Registry[str] = Registry("thing", "agentlake.test_things", builtins={"built": "nowhere"})
    things.register("one", "first")
    with pytest.raises(UserError, match="unknown thing 'two'; known: built, one"):
        things.get("two")


def test_a_plugin_that_fails_to_import_is_named_in_a_warning_and_the_rest_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _install(
        tmp_path,
        monkeypatch,
        "agentlake.test_things",
        {"good": "thirdparty:make", "broken": "thirdparty_missing_dependency:make"},
        "def make():\n    return 'good'\n",
    )
    things: Registry[object] = Registry("thing", "agentlake.test_things")
    things.register("registered", lambda: "registered")
    with caplog.at_level("WARNING", logger="agentlake.registry"):
        entries = things.entries()
        things.entries()  # asked again: warned once
    assert sorted(entries) == ["good", "registered"]
    assert entries["good"]() == "good"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "thing plugin 'broken' (thirdparty_missing_dependency:make in thirdparty)" in warnings[0]
    assert "ModuleNotFoundError" in warnings[0]
    assert "the other agentlake.test_things entries keep working" in warnings[0]
    # Asked for by name, it is refused naming it; the others still load.
    with pytest.raises(RunError, match="thing plugin 'broken' .*failed to load: ModuleNotFoundError"):
        things.get("broken")
    assert things.get("good")() == "good"


def test_a_plugin_that_does_not_fit_its_contract_is_left_out_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _install(tmp_path, monkeypatch, "agentlake.test_things", {"odd": "thirdparty:odd"}, "odd = 42\n")

    def callable_only(name: str, entry: object) -> None:
        if not callable(entry):
            raise UserError(f"thing {name!r} must be callable")

    things: Registry[object] = Registry("thing", "agentlake.test_things", check=callable_only)
    with caplog.at_level("WARNING", logger="agentlake.registry"):
        assert things.entries() == {}
    assert (
        "thing plugin 'odd' (thirdparty:odd in thirdparty) failed to load: UserError: thing 'odd' must be callable"
        in caplog.text
    )
