"""The read-only SQL guard: decides whether a query or a WHERE fragment may run.

Parse-based: DuckDB's own parser tells the statement type (``extract_statements``) and
``json_serialize_sql`` gives the tree, which is walked for table functions and file-like
table names. Table functions are allowlisted, not denylisted, because every extension
adds new file readers (``read_csv``, ``read_parquet``, ``iceberg_scan``...). The guard owns
no connection to the lake; the lake additionally runs with external access disabled, so a
gap here still cannot read a file.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import duckdb

from agentlake.errors import UserError

# Table functions that only compute or read the lake's own metadata.
ALLOWED_TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "json_each",
        "json_tree",
        "duckdb_tables",
        "duckdb_columns",
        "duckdb_views",
        "duckdb_types",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_schemas",
        "duckdb_functions",
        "duckdb_keywords",
        "pragma_table_info",
        "repeat",
    }
)
# Named in messages so the user sees why, not only that, a function is refused.
FILE_READERS = frozenset(
    {
        "read_csv",
        "read_csv_auto",
        "read_parquet",
        "parquet_scan",
        "parquet_metadata",
        "parquet_schema",
        "parquet_file_metadata",
        "parquet_kv_metadata",
        "read_json",
        "read_json_auto",
        "read_json_objects",
        "read_json_objects_auto",
        "read_ndjson",
        "read_ndjson_auto",
        "read_ndjson_objects",
        "read_text",
        "read_blob",
        "glob",
        "sniff_csv",
        "iceberg_scan",
        "delta_scan",
        "sqlite_scan",
        "postgres_scan",
        "mysql_scan",
        "read_xlsx",
    }
)
SQL_RUNNERS = frozenset({"query", "query_table"})

_ONLY = "only one SELECT (or WITH ... SELECT) query may run here"
_PROBE_TABLE = "__agentlake_filter_probe"
_parser_lock = threading.Lock()
_parser: duckdb.DuckDBPyConnection | None = None


def _parse_conn() -> duckdb.DuckDBPyConnection:
    global _parser
    if _parser is None:
        _parser = duckdb.connect(":memory:", config={"enable_external_access": False})
    return _parser


def _statements(sql: str) -> list[Any]:
    with _parser_lock:
        try:
            return list(_parse_conn().extract_statements(sql))
        except duckdb.ParserException as exc:
            raise UserError(f"SQL syntax error: {_first_line(exc)}; fix the query and retry") from None
        except duckdb.Error as exc:
            raise UserError(f"cannot parse the SQL: {_first_line(exc)}") from None


def _tree(sql: str) -> dict[str, Any]:
    with _parser_lock:
        raw = _parse_conn().execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()
    parsed = json.loads(raw[0]) if raw else {"error": True}
    if parsed.get("error"):
        raise UserError(
            f"{_ONLY}; this one cannot be analysed ({parsed.get('error_message', 'unknown form')})"
        )
    return parsed


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _looks_like_path(name: str) -> bool:
    return any(ch in name for ch in "./\\:") or name.startswith("~")


def _walk(node: Any) -> None:
    """Refuse forbidden table functions and file-like table names anywhere in the tree."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "TABLE_FUNCTION":
            function = node.get("function") or {}
            name = str(function.get("function_name", "")).lower()
            if name in FILE_READERS:
                raise UserError(
                    f"table function {name}() is not allowed: read-only SQL cannot read files or URLs; "
                    "load the file with `agentlake ingest FILE --dataset NAME` and query the dataset"
                )
            if name in SQL_RUNNERS:
                raise UserError(
                    f"table function {name}() is not allowed: it runs SQL built from a string; {_ONLY}"
                )
            if name not in ALLOWED_TABLE_FUNCTIONS:
                raise UserError(
                    f"table function {name}() is not allowed in read-only SQL; allowed: "
                    + ", ".join(sorted(ALLOWED_TABLE_FUNCTIONS))
                )
        table_name = node.get("table_name")
        if (
            kind in ("BASE_TABLE", "SHOW_REF")
            and isinstance(table_name, str)
            and _looks_like_path(table_name)
        ):
            raise UserError(
                f"reading {table_name!r} is not allowed: read-only SQL cannot read files or URLs; "
                "load the file with `agentlake ingest FILE --dataset NAME` and query the dataset"
            )
        for value in node.values():
            _walk(value)
    elif isinstance(node, list):
        for item in node:
            _walk(item)


def check_select(sql: str) -> str:
    """Return ``sql`` (stripped, without a trailing ';') if it is one read-only query.

    Passes exactly one SELECT-type statement (SELECT, WITH ... SELECT, FROM-first,
    DESCRIBE/SUMMARIZE of a table) that uses no file- or URL-reading table function and
    no table function outside :data:`ALLOWED_TABLE_FUNCTIONS`. Raises ``UserError`` naming
    what was refused (DDL, DML, ATTACH, COPY, INSTALL/LOAD, PRAGMA, SET, EXPORT, CALL, ...)
    or the syntax error.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise UserError('no SQL given: pass one SELECT query, e.g. "SELECT count(*) FROM workers"')
    statements = _statements(sql)
    if not statements:
        raise UserError("no SQL statement found: pass one SELECT query")
    if len(statements) > 1:
        raise UserError(f"{len(statements)} statements given; {_ONLY}")
    statement = statements[0]
    kind = statement.type.name
    if kind != "SELECT":
        raise UserError(f"{_describe_kind(kind, sql)} is not allowed: {_ONLY}; the lake is read-only here")
    _walk(_tree(statement.query))
    return sql.strip().rstrip(";").strip()


def check_where(fragment: str) -> str:
    """Return ``fragment`` (stripped) if it is a boolean WHERE condition and nothing more.

    Refuses statements, set operations, ORDER BY/LIMIT/GROUP BY smuggled after the
    condition, comments that hide a closing parenthesis, and subqueries that reach a
    forbidden table function. Splice the result as ``WHERE (<fragment>)``: keeping the
    parentheses keeps ``a OR b`` from escaping the caller's other conditions.
    """
    if not isinstance(fragment, str) or not fragment.strip():
        raise UserError("empty filter: pass a WHERE condition such as \"role = 'Welder' AND state = 'OH'\"")
    text = fragment.strip()
    # No newline before ')': a trailing '--' comment must swallow it and fail here, or it
    # would swallow the caller's own conditions once spliced into their one-line SQL.
    probe = f"SELECT * FROM {_PROBE_TABLE} WHERE ({text})"
    try:
        statements = _statements(probe)
    except UserError:
        raise UserError(
            f"filter {text!r} is not a WHERE condition (syntax error); write e.g. \"role = 'Welder' AND state = 'OH'\""
        ) from None
    if len(statements) != 1 or statements[0].type.name != "SELECT":
        raise UserError(
            f"filter {text!r} is not a single WHERE condition; statements are not allowed in a filter"
        )
    node = _tree(statements[0].query)["statements"][0]["node"]
    plain = (
        node.get("type") == "SELECT_NODE"
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and not node.get("group_expressions")
        and not (node.get("groups") or {}).get("grouping_sets")
        and node.get("having") is None
        and node.get("qualify") is None
        and node.get("sample") is None
        and (node.get("from_table") or {}).get("table_name") == _PROBE_TABLE
        and node.get("where_clause") is not None
    )
    if not plain:
        raise UserError(
            f"filter {text!r} is not a plain WHERE condition (no ORDER BY, LIMIT, GROUP BY, UNION or statements); "
            "write e.g. \"role = 'Welder' AND state = 'OH'\""
        )
    _walk(node["where_clause"])
    return text


def _describe_kind(kind: str, sql: str) -> str:
    first = sql.strip().split(None, 1)[0].upper() if sql.strip() else kind
    families = {
        "CREATE": "DDL",
        "DROP": "DDL",
        "ALTER": "DDL",
        "INSERT": "DML",
        "UPDATE": "DML",
        "DELETE": "DML",
        "MERGE_INTO": "DML",
    }
    family = families.get(kind)
    return f"{family} ({first})" if family else f"{first} ({kind})" if first != kind else kind
