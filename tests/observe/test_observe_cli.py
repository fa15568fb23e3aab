"""`agentlake ops tail|stats|query|show` and `agentlake observer serve --help`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from agentlake.cli.main import app, main
from agentlake.observe import ObservedOp, Observer, OpStore
from agentlake.observe.service import running_service
from agentlake.settings import load_settings

runner = CliRunner()


def _seed() -> None:
    now = datetime.now(UTC)
    with Observer(OpStore(load_settings().observer_path)) as observer:
        observer.record_many(
            [
                ObservedOp(
                    id="old",
                    ts=now - timedelta(hours=3),
                    endpoint="tool.sql",
                    source="agent",
                    duration_ms=4.0,
                ),
                ObservedOp(
                    id="fail",
                    ts=now - timedelta(minutes=5),
                    endpoint="task.fill",
                    source="scenario",
                    success=False,
                    error="no Welders in Cleveland",
                    run_id="r-1",
                    labels={"staffer_id": "st-1"},
                ),
                ObservedOp(id="new", ts=now, endpoint="llm.chat", source="llm", duration_ms=80.0),
            ]
        )


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the real entry point (with its error rendering); return the exit code and stderr."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    return int(info.value.code or 0), capsys.readouterr().err


def test_ops_query_filters_and_formats(capsys: pytest.CaptureFixture[str]) -> None:
    _seed()
    result = runner.invoke(app, ["ops", "query", "--failure", "--format", "json"])
    assert result.exit_code == 0, result.output
    (op,) = json.loads(result.output)
    assert op["id"] == "fail"
    assert op["error"] == "no Welders in Cleveland"
    recent = runner.invoke(app, ["ops", "query", "--since", "1h", "-f", "csv"])
    lines = recent.output.strip().splitlines()
    assert lines[0].startswith("ts,source,endpoint")
    assert len(lines) == 3
    assert "tool.sql" not in recent.output
    by_run = runner.invoke(app, ["ops", "query", "--run", "r-1", "--staffer", "st-1", "-f", "json"])
    assert [o["id"] for o in json.loads(by_run.output)] == ["fail"]
    code, err = _exit(["ops", "query", "--since", "yesterday-ish"], capsys)
    assert code == 2
    assert "ISO 8601" in err


def test_ops_stats_and_tail() -> None:
    _seed()
    stats = runner.invoke(app, ["ops", "stats", "--format", "json"])
    assert stats.exit_code == 0
    body = json.loads(stats.output)
    assert (body["total"], body["failures"]) == (3, 1)
    assert body["by_source"]["llm"] == 1
    table = runner.invoke(app, ["ops", "stats"])
    assert "total" in table.output
    assert "source scenario" in table.output
    tail = runner.invoke(app, ["ops", "tail", "-n", "2", "-f", "json"])
    assert [o["id"] for o in json.loads(tail.output)] == ["fail", "new"]


def test_ops_reads_through_the_service_when_given_a_url() -> None:
    _seed()
    with (
        Observer(OpStore(load_settings().observer_path)) as observer,
        running_service(observer, load_settings()) as url,
    ):
        result = runner.invoke(app, ["ops", "query", "--url", url, "--source", "llm", "-f", "json"])
        assert result.exit_code == 0, result.output
        assert [o["id"] for o in json.loads(result.output)] == ["new"]


def test_ops_stats_on_a_fresh_data_dir_shows_zeros() -> None:
    result = runner.invoke(app, ["ops", "stats", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert (json.loads(result.output)["total"], json.loads(result.output)["failures"]) == (0, 0)


def test_reading_a_fresh_data_dir_creates_no_store() -> None:
    for command in (["ops", "stats"], ["ops", "query"], ["ops", "tail"]):
        assert runner.invoke(app, command).exit_code == 0
    assert not load_settings().observer_path.exists()


def test_ops_query_on_a_fresh_data_dir_is_an_empty_list() -> None:
    result = runner.invoke(app, ["ops", "query", "--format", "json"])
    assert json.loads(result.output) == []


def test_ops_show_prints_one_op_as_json() -> None:
    _seed()
    result = runner.invoke(app, ["ops", "show", "fail"])
    assert result.exit_code == 0, result.output
    op = json.loads(result.output)
    assert (op["id"], op["error"], op["labels"]) == (
        "fail",
        "no Welders in Cleveland",
        {"staffer_id": "st-1"},
    )


def test_ops_show_of_an_unknown_id_is_one_line_saying_how_to_find_ids(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _seed()
    code, err = _exit(["ops", "show", "L-nothere"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "agentlake ops query" in err


def test_ops_show_on_a_fresh_data_dir_says_no_such_op(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _exit(["ops", "show", "judged-1"], capsys)
    assert code == 2
    assert "no op 'judged-1'" in err


def test_ops_query_by_id() -> None:
    _seed()
    result = runner.invoke(app, ["ops", "query", "--id", "old", "-f", "json"])
    assert [op["id"] for op in json.loads(result.output)] == ["old"]


def test_ops_tables_show_each_ops_id() -> None:
    _seed()
    result = runner.invoke(app, ["ops", "query", "--source", "llm", "-f", "csv"])
    header, row = result.output.strip().splitlines()
    assert dict(zip(header.split(","), row.split(","), strict=True))["id"] == "new"


def test_ops_show_through_the_service() -> None:
    _seed()
    with (
        Observer(OpStore(load_settings().observer_path)) as observer,
        running_service(observer, load_settings()) as url,
    ):
        result = runner.invoke(app, ["ops", "show", "new", "--url", url])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["endpoint"] == "llm.chat"


def test_observer_serve_help() -> None:
    result = runner.invoke(app, ["observer", "serve", "--help"])
    assert result.exit_code == 0
    assert "--port" in result.output
    assert "/v1/traces" in result.output
