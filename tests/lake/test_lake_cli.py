"""The lake's CLI doors: ingest, sql, datasets. Bad input exits 2 with one line and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def items(tmp_path: Path, cli) -> Path:
    """A lake with dataset 'items' (key id, 2 rows, 1 ingest)."""
    path = tmp_path / "items.csv"
    path.write_text("id,name,score\n1,a,0.5\n2,b,0.7\n")
    code, out, _ = cli("ingest", str(path), "--dataset", "items", "--key", "id")
    assert code == 0
    assert "2 rows" in out
    return tmp_path


def state(cli) -> tuple[int, int, list]:
    code, out, _ = cli("datasets", "show", "items", "--format", "json")
    assert code == 0
    info = json.loads(out)
    return info["row_count"], len(info["history"]), info["columns"]


def test_ingest_sql_and_datasets_round_trip(items: Path, cli) -> None:
    more = items / "more.jsonl"
    more.write_text('{"id": 3, "name": "c", "score": 0.9}\n')
    code, out, _ = cli("ingest", str(more), "-d", "items")
    assert code == 0
    assert "(2 -> 3 rows)" in out

    code, out, _ = cli("sql", "SELECT id, name FROM items ORDER BY id", "--format", "json")
    assert code == 0
    assert json.loads(out) == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "b"},
        {"id": 3, "name": "c"},
    ]
    code, out, _ = cli("sql", "SELECT id FROM items ORDER BY id", "--format", "csv")
    assert out.splitlines() == ["id", "1", "2", "3"]

    code, out, err = cli("sql", "SELECT * FROM range(20)", "--max-rows", "5", "-f", "csv")
    assert code == 0
    assert len(out.splitlines()) == 6
    assert "truncated" in err

    code, out, _ = cli("datasets", "--format", "json")
    assert [(d["name"], d["row_count"], d["key"]) for d in json.loads(out)] == [("items", 3, "id")]
    code, out, _ = cli("datasets", "show", "items")
    assert code == 0
    assert "ingest history" in out
    assert "schema" in out
    code, out, _ = cli("datasets", "show", "items", "--format", "json")
    history = json.loads(out)["history"]
    assert [h["mode"] for h in history] == ["append", "append"]
    assert history[-1]["source"].endswith("more.jsonl")


def test_upsert_replace_and_evolve_through_the_cli(items: Path, cli) -> None:
    update = items / "update.csv"
    update.write_text("id,name,score,shift\n2,bb,0.8,night\n4,d,0.1,day\n")
    code, out, _ = cli("ingest", str(update), "-d", "items", "--mode", "upsert", "--key", "id", "--evolve")
    assert code == 0
    assert "added columns: shift" in out
    assert "(2 -> 3 rows)" in out
    code, out, _ = cli("ingest", str(update), "-d", "items", "--mode", "replace")
    assert code == 0
    assert "(3 -> 2 rows)" in out


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["ingest", "{dir}/missing.csv", "-d", "items"], None, "file not found"),
        (["ingest", "{dir}/empty.csv", "-d", "items"], "", "is empty"),
        (
            ["ingest", "{dir}/bad.csv", "-d", "items"],
            "id,name,score\n5,e,0.1\n6,f\n",
            "bad.csv line 3 has 2 fields but the header has 3",
        ),
        (
            ["ingest", "{dir}/bad.csv", "-d", "items"],
            "id,name,score\n5,e,0.1\n6,f,lots\n",
            "line 3: column score has 'lots', which is not a DOUBLE",
        ),
        (["ingest", "{dir}/bad.csv", "-d", "items"], "id,name\n5,e\n", "lacks column(s) score"),
        (
            ["ingest", "{dir}/bad.csv", "-d", "items", "--mode", "upsert"],
            "id,name,score\n1,x,0.1\n",
            "upsert needs a key",
        ),
        (
            ["ingest", "{dir}/bad.csv", "-d", "items", "--mode", "upsert", "--key", "id"],
            "id,name,score\n7,x,0.1\n7,y,0.2\n",
            "not unique",
        ),
        (["ingest", "{dir}/bad.csv", "-d", "Items"], "id,name,score\n8,x,0.1\n", "invalid dataset name"),
        (["datasets", "show", "nope"], None, "unknown dataset 'nope'; known datasets: items"),
        (["sql", "SELECT * FROM items WHERE"], None, "SQL syntax error"),
        (["sql", "DELETE FROM items"], None, r"DML (DELETE) is not allowed"),
        (["sql", "SELECT * FROM read_csv('/etc/passwd')"], None, "read_csv() is not allowed"),
        (["sql", "SELECT nope FROM items"], None, "query failed"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    cli, items: Path, args: list[str], content: str | None, message: str
) -> None:
    if content is not None:
        (items / Path(args[1]).name).write_text(content)
    before = state(cli)
    code, out, err = cli(*[arg.replace("{dir}", str(items)) for arg in args])
    assert code == 2
    assert err.startswith("error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert state(cli) == before


def test_empty_lake(cli) -> None:
    code, _, err = cli("datasets")
    assert code == 0
    assert "no datasets yet" in err
    code, _, err = cli("sql", "SELECT 1")
    assert code == 2
    assert "no lake at" in err


def test_real_process_exit_code_and_timeout(tmp_path: Path, items: Path) -> None:
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "agentlake.cli.main"]
    refused = subprocess.run(
        [*cmd, "sql", "DROP TABLE items"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "DDL (DROP) is not allowed" in refused.stderr
    slow = subprocess.run(
        [*cmd, "sql", "SELECT count(*) FROM range(1000000000000) a", "--timeout", "0.5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert slow.returncode == 1
    assert "interrupted after the 0.5 s timeout" in slow.stderr
