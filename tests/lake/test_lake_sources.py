"""External sources: a real PostgreSQL (started by the tests, `crm_url`) and a SQLite file read
in place as ``NAME.table``, read-only, under the guard's rules, the timeout and the caps; the
password in a source's URL is never printed nor recorded."""

from __future__ import annotations

import json
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentlake.agents.policy import RunContext
from agentlake.agents.tools import datasets_text, lake_tools
from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.lake import Lake
from agentlake.lake.sources import SourceRegistry, sources_path
from agentlake.observe import MemorySink, Observer
from agentlake.settings import Settings


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(data_dir=tmp_path / "data", default_model="none", executor_model=None, **overrides)


@pytest.fixture
def lake(tmp_path: Path, crm_url: str) -> Iterator[Lake]:
    """A lake with one dataset of its own (``notes``) and the source ``crm``."""
    settings = _settings(tmp_path, sql_timeout_s=1.0)
    csv = tmp_path / "notes.csv"
    csv.write_text("id,text\n1,hello\n")
    with Lake.open(settings) as opened:
        opened.ingest(csv, "notes")
        opened.sources.add("crm", crm_url)
        yield opened


def test_a_sources_tables_join_the_catalog_as_name_dot_table(lake: Lake) -> None:
    infos = {info.name: info for info in lake.datasets()}

    assert sorted(infos) == ["crm.customers", "crm.orders", "crm.sales.targets", "notes"]
    assert infos["crm.orders"].columns == [
        ("id", "INTEGER"),
        ("customer_id", "INTEGER"),
        ("status", "VARCHAR"),
        ("amount", "DECIMAL"),
        ("placed", "DATE"),
    ]
    assert infos["crm.orders"].row_count == 4
    assert infos["crm.orders"].source == "crm"
    assert infos["notes"].source is None
    assert lake.dataset("crm.customers").row_count == 2


def test_a_query_naming_a_source_runs_there_in_the_lakes_dialect(lake: Lake) -> None:
    result = lake.query(
        "SELECT c.name, count(*) AS n, sum(o.amount) AS total FROM crm.orders o JOIN crm.customers c "
        "ON o.customer_id = c.id WHERE o.status = 'open' GROUP BY c.name ORDER BY c.name"
    )
    assert [(name, n, float(total)) for name, n, total in result.rows] == [
        ("Acme", 1, 120.5),
        ("Globex", 1, 42.25),
    ]
    # DuckDB's strftime, written for the lake, is PostgreSQL's to_char at the source.
    years = lake.query("SELECT DISTINCT strftime(placed, '%Y') AS y FROM crm.orders ORDER BY y")
    assert years.rows == [["2025"], ["2026"]]
    assert lake.query("SELECT goal FROM crm.sales.targets").rows == [[100]]
    assert lake.query('SELECT count(*) FROM "crm.orders"').rows == [[4]]


def test_the_source_runs_the_query_in_a_read_only_transaction(lake: Lake) -> None:
    # A SELECT the guard passes that would still write: PostgreSQL refuses it read-only.
    with pytest.raises(UserError, match="source crm is read-only here") as caught:
        lake.query("SELECT nextval('order_numbers')  FROM crm.orders")
    assert "read-only transaction" in caught.value.message


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("DELETE FROM crm.orders", "DML (DELETE) is not allowed"),
        ("SELECT 1 FROM crm.orders; DROP TABLE crm.orders", "2 statements given"),
        ("SELECT pg_sleep(5) FROM crm.orders", "pg_sleep() is not allowed in a query on source crm"),
        ("SELECT pg_read_file('/etc/passwd') FROM crm.orders", "pg_read_file() is not allowed"),
        (
            "SELECT query_to_xml('DELETE FROM orders', true, true, '') FROM crm.orders",
            "query_to_xml() is not allowed",
        ),
        ("SELECT * FROM crm.orders, notes", "a query reads the lake or one source, not both"),
    ],
)
def test_the_guards_rules_hold_at_a_source(lake: Lake, sql: str, refused: str) -> None:
    with pytest.raises(UserError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        lake.query(sql)
    assert lake.query("SELECT count(*) FROM crm.orders").rows == [[4]]


def test_a_slow_query_at_a_source_is_interrupted_at_the_timeout(lake: Lake) -> None:
    with pytest.raises(RunError, match=r"interrupted after the 1 s timeout.*sql_timeout_s"):
        lake.query("SELECT count(*) FROM crm.orders, generate_series(1, 200000000) AS g")


def test_a_sources_rows_are_capped_in_rows_and_bytes(tmp_path: Path, lake: Lake) -> None:
    capped = lake.query("SELECT id FROM crm.orders ORDER BY id", max_rows=2)
    assert capped.rows == [[1], [2]]
    assert capped.truncated is True

    with Lake.open(
        _settings(tmp_path, sql_max_result_bytes=120), path=lake.path.with_name("small.duckdb")
    ) as small:
        small.sources.add("crm", lake.sources.get("crm").target)
        wide = small.query("SELECT repeat('x', 500) AS filler FROM crm.orders")
    assert wide.truncated is True
    assert len(json.dumps(wide.rows)) < 200


def test_a_source_is_refused_when_unreachable_without_its_password(tmp_path: Path, crm_url: str) -> None:
    registry = SourceRegistry(sources_path(tmp_path / "lake.duckdb"))
    password = urlsplit(crm_url).password or ""
    down = crm_url.replace(f":{urlsplit(crm_url).port}/", ":9/")

    with pytest.raises(UnavailableError, match="source crm2 .* cannot be reached") as caught:
        registry.add("crm2", down)

    assert password not in caught.value.message
    assert registry.list() == []


@pytest.mark.parametrize(
    ("name", "target", "problem"),
    [
        ("Bad-Name", "x.db", "invalid source name 'Bad-Name'"),
        ("main", "x.db", "invalid source name 'main'"),
        ("ok", "mysql://u@h/db", "unsupported source mysql://"),
        ("ok", "missing.db", "no SQLite file at"),
    ],
)
def test_bad_sources_are_refused_in_one_line(tmp_path: Path, name: str, target: str, problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        SourceRegistry(sources_path(tmp_path / "lake.duckdb")).add(name, target)


def test_the_password_is_never_printed_nor_recorded(tmp_path: Path, crm_url: str, cli) -> None:
    password = urlsplit(crm_url).password or ""
    assert password  # the fixture's URL carries one
    notes = tmp_path / "notes.csv"
    notes.write_text("id,text\n1,hello\n")
    assert cli("ingest", str(notes), "--dataset", "notes").code == 0

    code, added, _ = cli("sources", "add", "crm", crm_url)
    assert code == 0
    assert "crm.orders" in added
    code, listed, _ = cli("sources", "--format", "json")
    assert json.loads(listed)[0]["target"].startswith("postgresql://reader:***@127.0.0.1:")
    code, catalog, _ = cli("datasets", "--format", "json")
    code, sql_out, _ = cli("sql", "SELECT count(*) AS n FROM crm.orders WHERE status = 'open'", "-f", "json")
    assert json.loads(sql_out) == [{"n": 2}]
    code, failed, failed_err = cli("sql", "SELECT nope FROM crm.orders")
    assert code == 2

    registry_file = sources_path(tmp_path / "data" / "lake.duckdb")
    assert stat.S_IMODE(registry_file.stat().st_mode) == 0o600
    for shown in (added, listed, catalog, sql_out, failed, failed_err):
        assert password not in shown


def test_the_sql_tool_reads_a_source_and_its_op_holds_no_password(lake: Lake, crm_url: str) -> None:
    memory = MemorySink()
    observer = Observer(memory, ring_size=100)
    result = lake_tools().call(
        "sql",
        {"query": "SELECT name FROM crm.customers ORDER BY name"},
        ctx=RunContext(lake=lake, observer=observer),
    )

    assert result.ok is True
    assert [row["name"] for row in result.data] == ["Acme", "Globex"]
    (op,) = memory.ops
    assert urlsplit(crm_url).password not in op.model_dump_json()
    assert "- crm.orders (4 rows): id integer, customer_id integer, status varchar" in "\n".join(
        datasets_text(lake, None)
    )


def test_a_sqlite_file_is_a_read_only_source(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE items (sku TEXT, price REAL, added DATE)")
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?)", [("a", 1.5, "2026-01-01"), ("b", 2.0, "2026-02-01")]
        )
    with Lake.open(_settings(tmp_path, sql_timeout_s=0.5)) as lake:
        source, tables = lake.sources.add("shop", str(path))
        assert [t.name for t in tables] == ["items"]
        assert lake.dataset("shop.items").columns == [
            ("sku", "VARCHAR"),
            ("price", "DOUBLE"),
            ("added", "DATE"),
        ]
        total = lake.query("SELECT sum(price) AS total FROM shop.items WHERE sku ILIKE 'A'")
        assert total.rows == [[1.5]]
        with pytest.raises(RunError, match="interrupted after the 0.5 s timeout"):
            lake.query(
                "WITH RECURSIVE c AS (SELECT 1 AS x UNION ALL SELECT x + 1 FROM c) "
                "SELECT count(*) FROM c, shop.items"
            )
        with pytest.raises(UserError, match="load_extension"):
            lake.query("SELECT load_extension('x') FROM shop.items")
        lake.sources.remove("shop")
        assert [info.name for info in lake.datasets()] == []


def test_ask_answers_from_a_source(lake: Lake) -> None:
    from agentlake.agents.ask import ask
    from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted

    asker = ScriptedProvider("asker")
    register_scripted("sources-asker", asker)
    try:
        plan = {"route": "sql", "sql": "SELECT count(*) AS n FROM crm.orders WHERE status = 'open'"}
        asker.enqueue(json.dumps(plan))
        asker.enqueue("2 orders are open [SQL].")
        answer = ask(
            "How many open orders are there?", lake=lake, model="scripted:sources-asker", lessons=False
        )
    finally:
        unregister_scripted("sources-asker")

    assert answer.route == "sql"
    assert answer.sources[0].text == "one value: n = 2"
    # The plan was shown the source's tables with the values of their text columns.
    assert "crm.orders (4 rows)" in asker.history[0][0][0].content
