"""The read-only SQL guard and the WHERE-fragment check."""

from __future__ import annotations

import pytest

from agentlake.errors import UserError
from agentlake.lake import check_select, check_where


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  select count(*) from workers ;  ",
        "WITH w AS (SELECT * FROM workers) SELECT role, count(*) FROM w GROUP BY role",
        "FROM workers SELECT name LIMIT 3",
        "SELECT * FROM workers WHERE worker_id IN (SELECT worker_id FROM placements WHERE status = 'no_show')",
        "SELECT * FROM range(10) r, unnest([1, 2]) u",
        "DESCRIBE workers",
    ],
)
def test_read_queries_pass(sql: str) -> None:
    assert check_select(sql) == sql.strip().rstrip(";").strip()


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DROP TABLE workers", r"DDL \(DROP\) is not allowed"),
        ("CREATE TABLE x AS SELECT 1", r"DDL \(CREATE\) is not allowed"),
        ("ALTER TABLE workers ADD COLUMN x INT", r"DDL \(ALTER\) is not allowed"),
        ("INSERT INTO workers VALUES (1)", r"DML \(INSERT\) is not allowed"),
        ("UPDATE workers SET name = 'x'", r"DML \(UPDATE\) is not allowed"),
        ("DELETE FROM workers", r"DML \(DELETE\) is not allowed"),
        ("ATTACH 'other.db'", r"ATTACH .*not allowed"),
        ("COPY workers TO 'out.csv'", r"COPY .*not allowed"),
        ("INSTALL httpfs", r"INSTALL .*not allowed"),
        ("LOAD httpfs", r"LOAD .*not allowed"),
        ("PRAGMA table_info('workers')", r"PRAGMA .*not allowed"),
        ("SET threads = 1", r"SET .*not allowed"),
        ("EXPORT DATABASE 'dir'", r"EXPORT .*not allowed"),
        ("CALL pragma_version()", r"CALL .*not allowed"),
        ("SELECT 1; DROP TABLE workers", r"2 statements given"),
        (
            "SELECT * FROM read_csv('/etc/passwd')",
            r"read_csv\(\) is not allowed: read-only SQL cannot read files or URLs",
        ),
        ("SELECT * FROM read_parquet('x.parquet')", r"read_parquet\(\) is not allowed"),
        ("SELECT * FROM read_json_auto('x.json')", r"read_json_auto\(\) is not allowed"),
        ("SELECT * FROM glob('*')", r"glob\(\) is not allowed"),
        ("SELECT * FROM read_text('/etc/hosts')", r"read_text\(\) is not allowed"),
        ("SELECT * FROM 'data.csv'", r"reading 'data.csv' is not allowed"),
        (
            "SELECT * FROM 'https://example.com/x.parquet'",
            r"reading 'https://example.com/x.parquet' is not allowed",
        ),
        (
            "SELECT * FROM workers WHERE id IN (SELECT a FROM read_csv('x.csv'))",
            r"read_csv\(\) is not allowed",
        ),
        ("WITH x AS (SELECT * FROM parquet_scan('x')) SELECT * FROM x", r"parquet_scan\(\) is not allowed"),
        (
            "SELECT * FROM query('DROP TABLE workers')",
            r"query\(\) is not allowed: it runs SQL built from a string",
        ),
        ("SELECT * FROM duckdb_secrets()", r"duckdb_secrets\(\) is not allowed in read-only SQL; allowed:"),
        ("SELEC 1", r"SQL syntax error"),
        ("", r"no SQL given"),
    ],
)
def test_refused_with_a_reason(sql: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_select(sql)


@pytest.mark.parametrize(
    "fragment",
    [
        "role = 'Welder' AND state = 'OH'",
        "reliability >= 0.8 OR archetype = 'reliable veteran'",
        "certifications ILIKE '%osha%'",
        "worker_id NOT IN (SELECT worker_id FROM placements WHERE status = 'no_show')",
    ],
)
def test_where_fragments_pass(fragment: str) -> None:
    assert check_where(f"  {fragment} ") == fragment


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ("role = 'Welder'; DROP TABLE workers", "not a WHERE condition"),
        ("1=1 LIMIT 5", "not a WHERE condition"),
        ("1=1) UNION SELECT * FROM workers --", "not a (plain )?WHERE condition"),
        ("1=1) ORDER BY (1", "not a plain WHERE condition"),
        ("1=1) GROUP BY (1", "not a plain WHERE condition"),
        ("1=1 --", "not a WHERE condition"),
        ("state = 'OH' /* unclosed", "not a WHERE condition"),
        ("worker_id IN (SELECT a FROM read_csv('/etc/passwd'))", r"read_csv\(\) is not allowed"),
        ("EXISTS (SELECT * FROM 'x.parquet')", r"reading 'x.parquet' is not allowed"),
        ("DROP TABLE workers", "not a WHERE condition"),
        ("   ", "empty filter"),
    ],
)
def test_where_fragments_refused(fragment: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_where(fragment)
