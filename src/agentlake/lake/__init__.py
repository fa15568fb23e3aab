"""The lakehouse: one DuckDB file with a dataset catalog, atomic ingest and guarded SQL.

Public surface: :class:`Lake` (open, ingest, write_table, datasets, query, read_arrow,
cursor, write), the result models, and the SQL guard (:func:`check_select`,
:func:`check_where`). Vector indexes and hybrid search live beside it (``index``,
``search``) and use the same ``Lake``.
"""

from agentlake.lake.catalog import DatasetInfo, IngestRecord
from agentlake.lake.guard import check_select, check_where
from agentlake.lake.ingest import IngestResult
from agentlake.lake.lakehouse import Lake, QueryResult

__all__ = [
    "DatasetInfo",
    "IngestRecord",
    "IngestResult",
    "Lake",
    "QueryResult",
    "check_select",
    "check_where",
]
