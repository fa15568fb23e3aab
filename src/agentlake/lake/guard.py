"""The read-only SQL guard: decides whether a query or a WHERE fragment may run.

Parse-based: DuckDB's own parser tells the statement type (``extract_statements``) and
``json_serialize_sql`` gives the tree, which is walked for table functions and file-like
table names. Table functions are allowlisted, not denylisted, because every extension
adds new file readers (``read_csv``, ``read_parquet``, ``iceberg_scan``...). The guard owns
no connection to the lake; the lake additionally runs with external access disabled, so a
gap here still cannot read a file.

Three more things are refused because no timeout could stop them or they show the server
rather than the data: the lake's internal tables (names starting with ``_``: the catalog,
the ingest history with its file paths, the embedding cache) and ``current_setting`` (which
names the data directory); and scalar functions that build one value whose size a query
chooses (``range``, ``repeat``, ``list_resize``, ``lpad``, format widths, ...) unless the size
is a literal under :data:`MAX_BUILT_ITEMS`, and never inside a lambda, which runs them once
per element. DuckDB checks for an interrupt between chunks of rows, not while one function
builds one value: ``len(range(100000000))`` ran for 21 s and took 7 GB past a 2 s timeout
and a 1 GB memory limit (measured, DuckDB 2.0), while the table function ``FROM range(...)``
stops at once. WHERE fragments are parsed twice, alone and inside parentheses, and must give
the same expression both times, so a fragment cannot close the caller's parenthesis.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

import duckdb

from agentlake.errors import UserError
from agentlake.lake.bounds import error_line, excerpt

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
# Scalar functions that show the server rather than the data (paths, settings).
SERVER_FUNCTIONS = frozenset({"current_setting", "getenv"})
# Scalar functions that build one value whose size (list items or characters) is given by
# these argument positions; None: every argument bounds the size (range's start/stop/step).
SIZED_FUNCTIONS: dict[str, tuple[int, ...] | None] = {
    "range": None,
    "generate_series": None,
    "list_resize": (1,),
    "array_resize": (1,),
    "repeat": (1,),
    "lpad": (1,),
    "rpad": (1,),
    "bar": (3,),
    "bitstring": (1,),
}
FORMAT_FUNCTIONS = frozenset({"printf", "format", "sprintf"})
# The largest value (list items or characters) such a function may build: DuckDB evaluates a
# chunk of 2048 rows at once, so one chunk can build 2048 times this.
MAX_BUILT_ITEMS = 10_000
# Longest WHERE fragment: filters are conditions, not programs.
MAX_FRAGMENT_CHARS = 4000

_ONLY = "only one SELECT (or WITH ... SELECT) query may run here"
_PROBE_TABLE = "__agentlake_filter_probe"
_parser_lock = threading.Lock()
_parser: duckdb.DuckDBPyConnection | None = None
_reserved: frozenset[str] | None = None


def _parse_conn() -> duckdb.DuckDBPyConnection:
    global _parser
    if _parser is None:
        _parser = duckdb.connect(":memory:", config={"enable_external_access": False})
    return _parser


def reserved_words() -> frozenset[str]:
    """The keywords DuckDB's parser does not take as a bare column name (every category but
    ``unreserved``), lower case; read from ``duckdb_keywords()`` once."""
    global _reserved
    if _reserved is None:
        with _parser_lock:
            rows = (
                _parse_conn()
                .execute(
                    "SELECT lower(keyword_name) FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'"
                )
                .fetchall()
            )
        _reserved = frozenset(row[0] for row in rows)
    return _reserved


def _statements(sql: str) -> list[Any]:
    with _parser_lock:
        try:
            return list(_parse_conn().extract_statements(sql))
        except duckdb.ParserException as exc:
            raise UserError(f"SQL syntax error: {_first_line(exc)}; fix the query and retry") from None
        except duckdb.Error as exc:
            raise UserError(f"cannot parse the SQL: {_first_line(exc)}") from None


def _serialize(queries: list[str]) -> list[str | None]:
    """``json_serialize_sql`` of each query, in one call on the parser connection."""
    columns = ", ".join("json_serialize_sql(?::VARCHAR)" for _ in queries)
    with _parser_lock:
        raw = _parse_conn().execute(f"SELECT {columns}", queries).fetchone()
    return list(raw) if raw else [None] * len(queries)


def _tree_of(serialized: str | None) -> dict[str, Any]:
    parsed = json.loads(serialized) if serialized else {"error": True}
    if parsed.get("error"):
        raise UserError(
            f"{_ONLY}; this one cannot be analysed ({str(parsed.get('error_message', 'unknown form'))[:300]})"
        )
    return parsed


def _tree(sql: str) -> dict[str, Any]:
    return _tree_of(_serialize([sql])[0])


def _int_literal(node: Any) -> int | None:
    """The integer a literal expression stands for (``10``, ``-3``, ``10::BIGINT``), else None."""
    if not isinstance(node, dict):
        return None
    if node.get("class") == "CONSTANT":
        text = str((node.get("literal") or {}).get("text", ""))
        try:
            return int(float(text)) if text.strip() else None
        except (ValueError, OverflowError):
            return None
    if node.get("class") == "CAST":
        return _int_literal(node.get("child"))
    if (
        node.get("class") == "FUNCTION"
        and node.get("function_name") == "-"
        and len(node.get("arguments") or []) == 1
    ):
        inner = _int_literal(node["arguments"][0].get("expression"))
        return None if inner is None else -inner
    return None


def _built_size(name: str, arguments: list[Any]) -> int | None:
    """How large a value ``name(arguments)`` builds, from literal arguments; None if not literal."""
    values = [_int_literal(arg.get("expression")) for arg in arguments]
    positions = SIZED_FUNCTIONS[name]
    if positions is None:  # range / generate_series: (stop), (start, stop) or (start, stop, step)
        if not values or any(v is None for v in values):
            return None
        start, stop, step = (
            (0, values[0], 1)
            if len(values) == 1
            else (values[0], values[1], values[2] if len(values) > 2 else 1)
        )
        return abs((stop - start) // step) if step else None  # type: ignore[operator]
    sizes = [values[i] for i in positions if i < len(values)]
    if len(sizes) < len(positions) or any(v is None for v in sizes):
        return None
    return max(abs(v) for v in sizes)  # type: ignore[arg-type]


def _check_function(node: dict[str, Any], in_lambda: bool) -> None:
    name = str(node.get("function_name", "")).lower()
    if name in SERVER_FUNCTIONS:
        raise UserError(f"{name}() is not allowed in read-only SQL: it shows the server, not the data")
    if name in SIZED_FUNCTIONS or name in FORMAT_FUNCTIONS:
        if in_lambda:
            raise UserError(
                f"{name}() is not allowed inside a lambda in read-only SQL: it would build a value per element"
            )
        arguments = node.get("arguments") or []
        if name in FORMAT_FUNCTIONS:
            first = (arguments[0].get("expression") or {}) if arguments else {}
            pattern = (
                str((first.get("literal") or {}).get("text", ""))
                if first.get("class") == "CONSTANT"
                else None
            )
            widths = [int(digits) for digits in re.findall(r"\d+", pattern or "")]
            size = max(widths, default=0) if pattern is not None else None
        else:
            size = _built_size(name, arguments)
        if size is None or size > MAX_BUILT_ITEMS:
            hint = (
                "write the format as a literal with widths under that"
                if name in FORMAT_FUNCTIONS
                else "for many rows use a table function, e.g. SELECT * FROM range(1000000)"
            )
            raise UserError(
                f"{name}() in read-only SQL needs literal sizes of at most {MAX_BUILT_ITEMS:,} (items or "
                f"characters): DuckDB cannot interrupt a value while it builds it; {hint}"
            )


def _first_line(exc: BaseException) -> str:
    return error_line(exc)


def _looks_like_path(name: str) -> bool:
    return any(ch in name for ch in "./\\:") or name.startswith("~")


def _walk(node: Any, in_lambda: bool = False) -> None:
    """Refuse forbidden table and scalar functions, file-like and internal table names anywhere
    in the tree."""
    if isinstance(node, dict):
        kind = node.get("type")
        if node.get("class") == "FUNCTION":
            _check_function(node, in_lambda)
        elif node.get("class") == "LAMBDA":
            in_lambda = True
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
        if kind in ("BASE_TABLE", "SHOW_REF") and isinstance(table_name, str) and table_name.startswith("_"):
            raise UserError(
                f"{table_name} is one of the lake's internal tables and cannot be read here; "
                "`agentlake datasets` names the datasets (and their ingest history)"
            )
        for key, value in node.items():
            if kind == "TABLE_FUNCTION" and key == "function" and isinstance(value, dict):
                # The table function itself was judged above (range() as a table is fine):
                # only its arguments are expressions to check.
                _walk(value.get("arguments"), in_lambda)
            else:
                _walk(value, in_lambda)
    elif isinstance(node, list):
        for item in node:
            _walk(item, in_lambda)


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


@dataclass(frozen=True)
class CheckedWhere:
    """A WHERE fragment the guard passed: its stripped ``text`` and DuckDB's parse ``tree`` of
    the condition (``json_serialize_sql``'s ``where_clause``), so a caller that compiles the
    filter (the attribute index) need not parse it again."""

    text: str
    tree: dict[str, Any]


def check_where(fragment: str) -> str:
    """Return ``fragment`` (stripped) if it is a boolean WHERE condition and nothing more.

    Refuses statements, set operations, ORDER BY/LIMIT/GROUP BY/WINDOW smuggled after the
    condition, parentheses that close the caller's own (``state = 'OH') OR (1=1``), comments
    that hide a closing parenthesis, fragments over :data:`MAX_FRAGMENT_CHARS`, and whatever
    :func:`check_select` refuses inside it. The fragment is parsed alone and inside
    parentheses; both must be one plain WHERE clause with the same expression tree, so
    splicing it as ``WHERE (<fragment>)`` adds exactly that expression, under the caller's
    parentheses.
    """
    return parse_where(fragment).text


def parse_where(fragment: str) -> CheckedWhere:
    """:func:`check_where`, returning the parse tree beside the text (same checks, same errors)."""
    if not isinstance(fragment, str) or not fragment.strip():
        raise UserError("empty filter: pass a WHERE condition such as \"role = 'Welder' AND state = 'OH'\"")
    text = fragment.strip()
    if len(text) > MAX_FRAGMENT_CHARS:
        raise UserError(
            f"the filter is {len(text)} characters long; at most {MAX_FRAGMENT_CHARS} are allowed"
        )
    # No newline before ')': a trailing '--' comment must swallow it and fail here, or it
    # would swallow the caller's own conditions once spliced into their one-line SQL.
    wrapped_query = _single_select(f"SELECT * FROM {_PROBE_TABLE} WHERE ({text})", text)
    try:
        alone_query: str | None = _single_select(f"SELECT * FROM {_PROBE_TABLE} WHERE {text}", text)
    except UserError:
        alone_query = None
    # Both probes in one DuckDB call: each call costs ~0.2 ms before any parsing.
    serialized = _serialize([wrapped_query] if alone_query is None else [wrapped_query, alone_query])
    wrapped = _plain_where(_tree_of(serialized[0]), text)
    try:
        alone = _plain_where(_tree_of(serialized[1]), text) if alone_query is not None else None
    except UserError:
        alone = None
    if alone is None or _shape(alone) != _shape(wrapped):
        raise UserError(
            f"filter {excerpt(text)} is not one WHERE condition: it closes a parenthesis it did not open; "
            "balance its parentheses, e.g. \"(state = 'OH') OR (state = 'PA')\""
        )
    _walk(wrapped)
    return CheckedWhere(text, wrapped)


def _single_select(probe: str, text: str) -> str:
    """The one SELECT statement of ``probe`` (a SELECT over the probe table); ``UserError``
    for a syntax error or anything more than one SELECT."""
    try:
        statements = _statements(probe)
    except UserError:
        raise UserError(
            f"filter {excerpt(text)} is not a WHERE condition (syntax error); write e.g. \"role = 'Welder' AND state = 'OH'\""
        ) from None
    if len(statements) != 1 or statements[0].type.name != "SELECT":
        raise UserError(
            f"filter {excerpt(text)} is not a single WHERE condition; statements are not allowed in a filter"
        )
    return statements[0].query


def _plain_where(tree: dict[str, Any], text: str) -> dict[str, Any]:
    """The WHERE expression of a probe's parse tree; ``UserError`` unless that is all the
    statement holds."""
    node = tree["statements"][0]["node"]
    plain = (
        node.get("type") == "SELECT_NODE"
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and not node.get("group_expressions")
        and not node.get("group_sets")
        and node.get("having") is None
        and node.get("qualify") is None
        and node.get("sample") is None
        and not node.get("windows")
        and (node.get("from_table") or {}).get("table_name") == _PROBE_TABLE
        and node.get("where_clause") is not None
    )
    if not plain:
        raise UserError(
            f"filter {excerpt(text)} is not a plain WHERE condition (no ORDER BY, LIMIT, GROUP BY, WINDOW, UNION "
            "or statements); write e.g. \"role = 'Welder' AND state = 'OH'\""
        )
    return node["where_clause"]


def _shape(node: Any) -> Any:
    """A parse tree without its source positions (which differ between the two probes)."""
    if isinstance(node, dict):
        return {key: _shape(value) for key, value in node.items() if not key.startswith("query_location")}
    if isinstance(node, list):
        return [_shape(item) for item in node]
    return node


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
