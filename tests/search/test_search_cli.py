"""The doors: `agentlake index`, `agentlake search` and `agentlake demo`. Bad input exits 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_build_then_search_as_json(data_dir: Path, cli) -> None:
    code, out, _ = cli("index", "build", "workers", "--column", "resume_text")
    assert code == 0
    assert "0 embedded" in out
    assert "from the cache" in out

    code, out, _ = cli(
        "search",
        "workers",
        "forklift operator",
        "--where",
        "worker_id <= 100",
        "-k",
        "3",
        "--format",
        "json",
    )
    hits = json.loads(out)
    assert code == 0
    assert len(hits) == 3
    assert all(h["doc_id"] == f"W-{h['key']}" and h["key"] <= 100 and h["sql_verified"] for h in hits)

    code, out, _ = cli("search", "profiles", "certified welder", "-k", "1")
    assert code == 0
    assert "P-1" in out
    assert "Certified welder" in out


def test_status_shows_stale_after_an_ingest(data_dir: Path, tmp_path: Path, cli) -> None:
    code, out, _ = cli("index", "status", "--format", "json")
    assert code == 0
    assert [s["fresh"] for s in json.loads(out)] == [True, True]
    extra = tmp_path / "more.csv"
    extra.write_text("id,bio\n5,Electrician apprentice with conduit bending experience.\n")
    assert cli("ingest", str(extra), "--dataset", "profiles")[0] == 0
    code, out, _ = cli("index", "status", "profiles")
    assert code == 0
    assert "STALE" in out
    code, _, err = cli("search", "profiles", "electrician")
    assert code == 2
    assert "stale" in err
    assert "agentlake index build profiles" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "workers", "welder", "--where", "1=1; DROP TABLE workers"], "not"),
        (
            ["search", "workers", "welder", "--where", "worker_id IN (SELECT 1 FROM read_csv('x'))"],
            "read_csv",
        ),
        (["search", "staff", "welder"], "unknown dataset 'staff'"),
        (["index", "build", "workers", "--column", "cv"], "no column 'cv'"),
        (["index", "build", "staff", "--column", "bio"], "unknown dataset"),
        (["index", "build", "workers", "--column", "resume_text", "--model", "nope"], "SCHEME:MODEL"),
    ],
)
def test_bad_input_exits_2_with_one_line(data_dir: Path, cli, args: list[str], message: str) -> None:
    code, out, err = cli(*args)
    assert code == 2
    assert message in err
    assert err.strip().startswith("error:")
    assert len(err.strip().splitlines()) <= 2
    code, out, _ = cli("sql", "SELECT count(*) AS n FROM workers", "--format", "json")
    assert json.loads(out) == [{"n": 300}]


@pytest.mark.slow
def test_demo_generates_indexes_and_answers(cli) -> None:
    code, out, err = cli("demo", "--workers", "300", "--seed", "3", "--llm-staffer", "none")
    assert code == 0, err
    assert "generated 300 workers" in out
    assert "indexed workers.resume_text" in out
    assert "agentlake sql" in out
    assert "avg_reliability" in out
    assert "agentlake search workers" in out
    assert "sql_verified" in out
    # The second run reuses the data and the index: nothing generated, nothing embedded.
    code, out, _ = cli("demo", "--workers", "300", "--seed", "3", "--llm-staffer", "none")
    assert code == 0
    assert "generated" not in out
    assert "indexed" not in out
    assert "avg_reliability" in out


def test_build_as_json_says_what_was_built(data_dir: Path, cli) -> None:
    code, out, err = cli("index", "build", "workers", "--column", "resume_text", "--format", "json")
    assert code == 0, err
    built = json.loads(out)
    assert (built["dataset"], built["text_column"], built["embedded"]) == ("workers", "resume_text", 0)


def test_drop_as_json_names_the_index_dropped(data_dir: Path, cli) -> None:
    code, out, err = cli("index", "drop", "workers", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["dataset"] == "workers"
