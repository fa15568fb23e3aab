"""What the witness teaches about a user's tables: lessons from answers, feedback and failed SQL.

Owns ``DataQuestionRules``, the data-questions domain's rule extractor (``learn`` runs it in
every cycle). It reads three kinds of op:

- ``ask.answer`` (an answer and every query it tried): a query that failed on a name that does
  not exist, followed by one that ran with the name the database suggested, teaches a
  ``rename`` for that table (``DataAction``);
- ``ask.feedback`` (a person's verdict on an answer, carrying the answer's question and query):
  *right* makes the query a ``playbook`` for questions of that shape; *wrong* with the expected
  value starts a search for a query that gives it: the answer's query rewritten by rules (a
  text column read as numbers, a count of distinct values, text compared case-insensitively)
  and, when a model is configured, by the model told the value it should give; the first that
  returns the expected value becomes the playbook (and a ``cast`` where that was the fix), else
  a ``note`` in words says what was wrong;
- any failed SQL call (``tool.sql``, the gateway's ``POST /sql``, the MCP ``sql`` tool) whose
  error names the near match of a missing table or column teaches that ``rename``.

Every lesson is checked before it is kept: its query is run on the lake (``ExtractContext.
lake``) and must run (and, for a correction, give the expected value); without a lake only
what a run already showed is kept (a rename whose renamed query ran). Lessons are scoped to the
table they are about (``fields.dataset``). It does not own curation, retrieval or measurement
(``agentlake.learn``), nor answering (``agentlake.agents.ask``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentlake.errors import AgentlakeError
from agentlake.lake.repair import column_types, missing_name, repaired_sql
from agentlake.learn.extractor import ExtractContext
from agentlake.learn.model import MAX_EVIDENCE_IDS, Delta, LessonDraft, LessonMatch
from agentlake.questions.domain import DOMAIN, TASK_KIND, DataAction
from agentlake.questions.judge import Tolerance

if TYPE_CHECKING:
    from agentlake.lake import DatasetInfo, Lake
    from agentlake.learn import Lesson
    from agentlake.learn.extractor import Op
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

ANSWER = "ask.answer"
FEEDBACK = "ask.feedback"
SQL_ENDPOINTS = frozenset({"tool.sql", "POST /sql", "mcp.sql"})
PLAYBOOK_CONFIDENCE = 0.8  # a person said so, or the value they expected came out of it
RENAME_CONFIDENCE = 0.6  # the database suggested it and the renamed query ran
NOTE_CONFIDENCE = 0.4
MAX_CORRECTIONS = 12  # candidate queries run per wrong answer
MAX_MODEL_TRIES = 2
_TABLES = re.compile(r'\b(?:FROM|JOIN)\s+"?([A-Za-z_][\w]*)"?', re.IGNORECASE)


def tables_of(sql: str) -> list[str]:
    """The tables ``sql`` reads (after FROM and JOIN), in order, once each."""
    return list(dict.fromkeys(_TABLES.findall(sql)))


class CorrectionPlan(BaseModel):
    """A corrected query, as a model proposes it."""

    sql: str


class DataQuestionRules:
    """The data-questions domain's lessons (see the module docstring). Never raises on odd ops."""

    name = "data-questions"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def extract(self, ops: Sequence[Op], context: ExtractContext) -> list[Delta]:
        drafts: list[LessonDraft] = []
        for op in ops:
            try:
                if op.endpoint == ANSWER:
                    drafts += self._renames_tried(op, context)
                elif op.endpoint == FEEDBACK:
                    drafts += self._from_feedback(op, context)
                elif op.endpoint in SQL_ENDPOINTS and not op.success:
                    drafts += self._rename_failed(op, context)
            except (AgentlakeError, ValueError, TypeError, KeyError) as exc:
                # One odd op must not stop the cycle: it is noted and skipped.
                context.notes.setdefault("data_question_skipped", []).append(f"{op.id}: {exc}"[:200])
        for draft in drafts:
            draft.project_id = context.project_id
        context.notes["data_question_drafts"] = len(drafts)
        deltas = [Delta(op="ADD", lesson=draft, actor="heuristic", reason=_reason(draft)) for draft in drafts]
        return deltas + self._stale(ops, context)

    # --- lessons the data no longer supports ------------------------------------------------

    def _stale(self, ops: Sequence[Op], context: ExtractContext) -> list[Delta]:
        """RETIRE the current lessons about the tables these ops used that no longer hold on the
        lake (the table changed): a playbook whose query fails, a rename or cast whose column
        is gone, any lesson about a table that is gone. Each with the reason."""
        if context.lake is None or context.store is None:
            return []
        touched: set[str] = set()
        for op in ops:
            if op.endpoint in (ANSWER, FEEDBACK):
                touched |= {str(d) for d in op.attributes.get("datasets") or [] if d}
                touched |= set(tables_of(str(op.attributes.get("sql") or "")))
            elif op.endpoint in SQL_ENDPOINTS:
                touched |= set(tables_of(_sql_of(op) or ""))
        if not touched:
            return []
        try:
            known = {info.name.casefold(): info for info in context.lake.datasets()}
        except AgentlakeError:
            return []
        retire = []
        for dataset in sorted(touched):
            lessons = context.store.list(
                status=["active", "pending"], domain=DOMAIN, project_id=context.project_id, dataset=dataset
            )
            for lesson in lessons:
                why = _no_longer(lesson, known.get(dataset.casefold()), context.lake)
                if why is not None:
                    retire.append(Delta(op="RETIRE", target_id=lesson.id, actor="heuristic", reason=why))
        return retire

    # --- renames ---------------------------------------------------------------------------

    def _renames_tried(self, op: Op, context: ExtractContext) -> list[LessonDraft]:
        """Renames an answer's own attempts showed: a failed query, then one that ran with the
        name the database suggested."""
        attempts = [a for a in op.attributes.get("attempts") or [] if isinstance(a, dict)]
        ran = [a for a in attempts if a.get("sql") and not a.get("error")]
        drafts = []
        for attempt in attempts:
            found = missing_name(str(attempt.get("error") or "")) if attempt.get("sql") else None
            if found is None:
                continue
            kind, wrong, right = found
            later = [a for a in ran if _names(a["sql"], right) and not _names(a["sql"], wrong)]
            if not later:
                continue
            table = right if kind == "table" else next(iter(tables_of(later[0]["sql"])), None)
            drafts.append(_rename(kind, wrong, right, table, op.id, str(op.attributes.get("question") or "")))
        return drafts

    def _rename_failed(self, op: Op, context: ExtractContext) -> list[LessonDraft]:
        """A failed SQL call's rename, kept once the renamed query runs on the lake."""
        sql = _sql_of(op)
        found = missing_name(op.error or "")
        if sql is None or found is None or context.lake is None:
            return []
        fixed = repaired_sql(sql, op.error or "", column_types(context.lake, sql))
        if fixed is None or not _runs(context.lake, fixed[0]):
            return []
        kind, wrong, right = found
        table = right if kind == "table" else next(iter(tables_of(fixed[0])), None)
        return [_rename(kind, wrong, right, table, op.id, sql)]

    # --- feedback --------------------------------------------------------------------------

    def _from_feedback(self, op: Op, context: ExtractContext) -> list[LessonDraft]:
        said = op.attributes
        question = str(said.get("question") or "").strip()
        sql = str(said.get("sql") or "").strip()
        if not question:
            return []
        datasets = [str(d) for d in said.get("datasets") or [] if d] or tables_of(sql)
        dataset = next(iter(tables_of(sql) or datasets), None)
        if said.get("right") is True:
            if not sql or (context.lake is not None and not _runs(context.lake, sql)):
                return []
            return [_playbook(question, sql, dataset, op.id, "a person said the answer was right")]
        expected = said.get("expected")
        if expected is not None and sql and context.lake is not None:
            corrected = self._correct(question, sql, str(expected), context.lake, context)
            if corrected is not None:
                fixed, how = corrected
                drafts = [
                    _playbook(question, fixed, dataset, op.id, f"gives the expected {expected} ({how})")
                ]
                cast = re.fullmatch(r"cast (\w+) as (\w+)", how)
                if cast:
                    drafts.append(_cast(cast.group(1), cast.group(2), dataset, op.id, question))
                return drafts
        words = f"For questions like {question!r}: the answer"
        if said.get("answer"):
            words += f" {str(said['answer'])[:120]!r}"
        words += " was wrong"
        if expected is not None:
            words += f"; the right answer is {expected}"
        if said.get("note"):
            words += f". {str(said['note'])[:200]}"
        return [_note(words, dataset, op.id, question)]

    def _correct(
        self, question: str, sql: str, expected: str, lake: Lake, context: ExtractContext
    ) -> tuple[str, str] | None:
        """A query that gives ``expected`` for ``question``: rewrites of ``sql`` by rules, then
        the model's; ``(query, how)`` or ``None``."""
        for candidate, how in list(_rewrites(sql, lake))[:MAX_CORRECTIONS]:
            if _gives(lake, candidate, expected):
                return candidate, how
        return self._model_correction(question, sql, expected, lake, context)

    def _model_correction(
        self, question: str, sql: str, expected: str, lake: Lake, context: ExtractContext
    ) -> tuple[str, str] | None:
        """The model's corrected query, told what the wrong one returned and what is expected
        (``learn_model``, else the default model; none configured: no correction)."""
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import Message, default_model, generate_structured
        from agentlake.llm.fence import DATA_RULE, data_block

        model = default_model(self.settings, "learn_model")
        if not model:
            return None
        tables = "\n".join(_table_lines(lake, tables_of(sql)))
        messages = [
            Message(
                role="system",
                content="You correct a DuckDB SQL query that answered a question wrongly. Reply with one JSON "
                'object: {"sql": "<the corrected SELECT>"}.\n' + DATA_RULE,
            ),
            Message(
                role="user",
                content=f"Question: {question}\nTables:\n{data_block(tables)}\nQuery: {sql}\n"
                f"It returned {_value_text(lake, sql)}; the right answer is {expected}. Write the corrected query.",
            ),
        ]
        for _attempt in range(MAX_MODEL_TRIES):
            try:
                plan = generate_structured(
                    model, messages, CorrectionPlan, settings=self.settings, max_tokens=400, think=False
                )
            except AgentlakeError as exc:
                context.notes.setdefault("data_question_model", []).append(exc.message[:200])
                return None
            if _gives(lake, plan.sql, expected):
                return plan.sql, "corrected by the model"
            messages += [
                Message(role="assistant", content=plan.model_dump_json()),
                Message(
                    role="user",
                    content=f"That returned {_value_text(lake, plan.sql)}, not {expected}. Try again.",
                ),
            ]
        return None


def _no_longer(lesson: Lesson, table: DatasetInfo | None, lake: Lake) -> str | None:
    """Why ``lesson`` no longer holds on ``lake`` (``table``: its dataset's info, ``None`` when
    the table is gone), or ``None``."""
    dataset = lesson.match.fields.get("dataset")
    if table is None:
        return f"the table {dataset} no longer exists"
    action = DataAction.model_validate(lesson.machine) if lesson.machine else None
    if action is None:
        return None
    columns = {column.casefold() for column, _ in table.columns}
    if action.kind == "playbook" and action.sql:
        try:
            lake.query(action.sql, max_rows=1)
        except AgentlakeError as exc:
            return f"its query no longer runs on {dataset}: {exc.message[:200]}"
    if (
        action.kind == "rename"
        and action.right
        and action.right.casefold() not in columns | {table.name.casefold()}
    ):
        return f"{action.right} is no longer a column of {dataset}"
    if action.kind in ("cast", "value") and action.column and action.column.casefold() not in columns:
        return f"{action.column} is no longer a column of {dataset}"
    return None


# --- lesson drafts ------------------------------------------------------------------------


def _match(dataset: str | None) -> LessonMatch:
    return LessonMatch(task_kind=TASK_KIND, fields={"dataset": dataset})


def _rename(kind: str, wrong: str, right: str, dataset: str | None, op_id: str, example: str) -> LessonDraft:
    where = f" in {dataset}" if dataset and kind == "column" else ""
    return LessonDraft(
        trigger=f"Writing SQL over {dataset or 'the data'}",
        action=f"The {kind} {wrong} does not exist{where}: write {right}",
        match=_match(dataset),
        machine=DataAction(kind="rename", wrong=wrong, right=right),
        domain=DOMAIN,
        confidence=RENAME_CONFIDENCE,
        evidence_op_ids=[op_id],
        evidence_excerpts=[example[:200]],
    )


def _playbook(question: str, sql: str, dataset: str | None, op_id: str, why: str) -> LessonDraft:
    return LessonDraft(
        trigger=f"Questions like {question[:200]!r}",
        action=f"This query answers it ({why}): {sql}"[:500],
        match=_match(dataset),
        machine=DataAction(kind="playbook", question=question[:500], sql=sql),
        domain=DOMAIN,
        confidence=PLAYBOOK_CONFIDENCE,
        evidence_op_ids=[op_id][-MAX_EVIDENCE_IDS:],
        evidence_excerpts=[question[:200]],
    )


def _cast(column: str, cast: str, dataset: str | None, op_id: str, question: str) -> LessonDraft:
    action = DataAction(kind="cast", column=column, cast=cast.upper())
    return LessonDraft(
        trigger=f"Using {column} of {dataset or 'the data'} as a number",
        action=f"{column} is text holding numbers (and markers like NA): use TRY_CAST({column} AS {cast.upper()})",
        match=_match(dataset),
        machine=action,
        domain=DOMAIN,
        confidence=PLAYBOOK_CONFIDENCE,
        evidence_op_ids=[op_id],
        evidence_excerpts=[question[:200]],
    )


def _note(words: str, dataset: str | None, op_id: str, question: str) -> LessonDraft:
    return LessonDraft(
        trigger=f"Questions like {question[:200]!r}",
        action=words[:500],
        match=_match(dataset),
        machine=DataAction(kind="note"),
        domain=DOMAIN,
        confidence=NOTE_CONFIDENCE,
        evidence_op_ids=[op_id],
        evidence_excerpts=[question[:200]],
    )


def _reason(draft: LessonDraft) -> str:
    return f"data questions: {draft.evidence_excerpts[0]}" if draft.evidence_excerpts else "data questions"


# --- checking queries ---------------------------------------------------------------------


def _names(sql: str, name: str) -> bool:
    return re.search(rf'(?<![\w.])"?{re.escape(name)}"?(?!\w)', sql, re.IGNORECASE) is not None


def _sql_of(op: Op) -> str | None:
    """The query a SQL call ran, from its recorded input (``{"query": ...}`` of a tool,
    ``{"sql": ...}`` of a request body, maybe inside the gateway's request record)."""
    try:
        data = json.loads(op.input_summary)
    except (ValueError, TypeError):
        return None
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("query", "sql"):
                if isinstance(item.get(key), str) and item[key].strip():
                    return item[key]
            stack += list(item.values())
        elif isinstance(item, str) and item.lstrip().startswith("{"):
            try:
                stack.append(json.loads(item))
            except ValueError:
                continue
    return None


def _runs(lake: Lake, sql: str) -> bool:
    try:
        lake.query(sql, max_rows=1)
    except AgentlakeError:
        return False
    return True


def _single(lake: Lake, sql: str) -> Any:
    """The one value ``sql`` returns (first column of the first row), or ``None``."""
    try:
        result = lake.query(sql, max_rows=2)
    except AgentlakeError:
        return None
    return result.rows[0][0] if result.rows and result.rows[0] else None


def _value_text(lake: Lake, sql: str) -> str:
    try:
        result = lake.query(sql, max_rows=5)
    except AgentlakeError as exc:
        return f"an error ({exc.message[:150]})"
    if not result.rows:
        return "no rows"
    return ", ".join(str(row[0]) for row in result.rows[:5])


def _gives(lake: Lake, sql: str, expected: str) -> bool:
    """Whether ``sql``'s one value is ``expected``: a number within half a unit of the last
    digit it is written to (5076 -> 0.5, 23.85 -> 0.005), else the same text."""
    value = _single(lake, sql)
    if value is None:
        return False
    text = expected.strip().replace(",", "")
    try:
        wanted = float(text)
    except ValueError:
        return str(value).strip().casefold() == expected.strip().casefold()
    try:
        got = float(value)
    except (TypeError, ValueError):
        return False
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return Tolerance(abs=0.5 * 10**-decimals).allows(got, wanted)


def _table_lines(lake: Lake, tables: list[str]) -> list[str]:
    known = {info.name: info for info in lake.datasets()}
    return [
        f"- {name}: " + ", ".join(f"{column} {kind.lower()}" for column, kind in known[name].columns)
        for name in tables
        if name in known
    ]


def _text_columns(lake: Lake, sql: str) -> list[tuple[str, str]]:
    """(table, column) of the VARCHAR columns of the tables ``sql`` reads."""
    known = {info.name: info for info in lake.datasets()}
    return [
        (table, column)
        for table in tables_of(sql)
        if table in known
        for column, kind in known[table].columns
        if kind.upper() == "VARCHAR"
    ]


def _rewrites(sql: str, lake: Lake) -> Iterator[tuple[str, str]]:
    """Candidate corrections of ``sql`` by rules, each with what it changed."""
    text = _text_columns(lake, sql)
    for _, column in text:
        # A text column of numbers (an "NA" kept it text) inside an aggregate or a comparison.
        pattern = re.compile(rf'(?<![\w."]){re.escape(column)}(?![\w"])')
        if pattern.search(sql):
            for cast in ("DOUBLE", "BIGINT"):
                yield pattern.sub(f"TRY_CAST({column} AS {cast})", sql), f"cast {column} as {cast.lower()}"
    counted = re.search(r"count\s*\(\s*\*\s*\)", sql, re.IGNORECASE)
    if counted:
        for _, column in text:
            yield (
                sql[: counted.start()] + f"count(DISTINCT {column})" + sql[counted.end() :],
                f"count distinct {column}",
            )
    literal = re.compile(r"""(\b[A-Za-z_]\w*)\s*=\s*('(?:[^']|'')*')""")
    if literal.search(sql):
        yield literal.sub(r"lower(\1) = lower(\2)", sql), "compare text case-insensitively"
