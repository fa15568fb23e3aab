"""The ask question pack: it loads, its files are the pinned ones, every truth is one value on a
lake built from it (a real DuckDB file), and the two passes ask different questions of the same
tables. Then the loader's refusals of a bad pack."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from agentlake.checksum import file_sha256
from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.questions.judge import stated_numbers
from agentlake.questions.pack import (
    INSTALL_HINT,
    Pack,
    Question,
    build_lake,
    checked_files,
    compute_truths,
    dataset_file,
    load_pack,
)
from agentlake.settings import load_settings

PACK_FILE = Path(__file__).parents[2] / "benchmarks" / "ask_pack" / "pack.yaml"
PACK = load_pack(PACK_FILE)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    # Module-scoped (one build for every truth), so isolated here rather than by conftest's
    # function-scoped fixture: no AGENTLAKE_* setting or config file of the machine applies.
    directory = tmp_path_factory.mktemp("ask-pack")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("AGENTLAKE_"):
                patch.delenv(name)
        patch.setenv("AGENTLAKE_CONFIG", str(directory / "agentlake.toml"))
        built = build_lake(PACK, directory)
    yield built
    built.close()


def _texts(questions: list[Question]) -> list[str]:
    return [" ".join(question.text.lower().split()) for question in questions]


# --- the pack itself -----------------------------------------------------------------------


def test_the_pack_loads() -> None:
    assert PACK.name == "ask-pack"


@pytest.mark.parametrize("name", sorted(PACK.datasets))
def test_each_file_is_the_one_the_pack_pins(name: str) -> None:
    assert file_sha256(dataset_file(PACK, name)) == PACK.datasets[name].sha256


@pytest.mark.parametrize("pass_", [1, 2])
def test_each_pass_has_at_least_32_questions(pass_: int) -> None:
    assert len(PACK.questions_of(pass_)) >= 32


def test_the_two_passes_read_the_same_datasets() -> None:
    first, second = ({name for q in PACK.questions_of(p) for name in PACK.datasets_of(q)} for p in (1, 2))
    assert first == second


def test_every_dataset_is_asked_about() -> None:
    assert {name for q in PACK.questions for name in PACK.datasets_of(q)} == set(PACK.datasets)


def test_the_two_passes_carry_the_same_tags() -> None:
    first, second = ({tag for q in PACK.questions_of(p) for tag in q.tags} for p in (1, 2))
    assert first == second


def test_no_question_is_asked_twice() -> None:
    repeated = [text for text, count in Counter(_texts(PACK.questions)).items() if count > 1]
    assert repeated == []


def test_a_packaged_file_is_found_without_importing_its_package() -> None:
    # vega_datasets imports pandas; finding its data must not run it.
    code = (
        "import sys; from agentlake.questions.pack import load_pack, dataset_file; "
        f"dataset_file(load_pack({str(PACK_FILE)!r}), 'stocks'); "
        "print(sorted(m for m in ('vega_datasets', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- the truths on a lake built from the pack ----------------------------------------------


@pytest.fixture(scope="module")
def truths(lake: Lake) -> dict[str, float | str]:
    return {qid: truth.value for qid, truth in compute_truths(PACK, lake).items()}


@pytest.mark.parametrize("question", PACK.questions, ids=lambda q: q.id)
def test_each_truth_is_exactly_one_non_null_value_of_its_kind(lake: Lake, question: Question) -> None:
    # compute_truths refuses SQL returning other than one row of one non-null value.
    value = compute_truths(PACK, lake, [question])[question.id].value
    assert isinstance(value, float if question.kind == "number" else str)


@pytest.mark.parametrize("question", PACK.questions, ids=lambda q: q.id)
def test_no_truth_hides_among_what_its_question_names(
    truths: dict[str, float | str], question: Question
) -> None:
    """The judge sets aside the numbers a question names, so a truth among them could never be
    stated; a text truth the question names would be right by repeating the question."""
    value = truths[question.id]
    if isinstance(value, float):
        assert value not in {v for number in stated_numbers(question.text) for v in number.values}
    else:
        assert value.lower() not in question.text.lower()


# How else an ingest may read the same files: per variant, read_csv options for every file and
# more for some (the ingest is being taught to read NA as null and text dates as dates).
READS = {
    "every-column-text": ("all_varchar=true", {}),
    "NA-as-null": ("nullstr=['NA', '']", {}),
    "text-dates-as-dates": (
        "nullstr=['NA', '']",
        {"stocks": "dateformat='%b %d %Y'", "orders": "dateformat='%m/%d/%Y'"},  # order_date: TIMESTAMP
    ),
}


@pytest.mark.parametrize("variant", sorted(READS))
def test_the_truths_hold_however_ingest_types_the_columns(
    truths: dict[str, float | str], variant: str, tmp_path: Path
) -> None:
    """The same files read with every column as text, with NA as null (numbers as numbers) or
    with text dates as dates: every truth is the same."""
    expected = {qid: pytest.approx(v) if isinstance(v, float) else v for qid, v in truths.items()}
    assert _truths_read_as(PACK, variant, tmp_path) == expected


def _truths_read_as(pack: Pack, variant: str, directory: Path) -> dict[str, float | str]:
    """Every truth of ``pack`` on a lake whose tables were read from its files as ``variant``."""
    options, more = READS[variant]
    reader = duckdb.connect()
    with Lake.open(load_settings(data_dir=directory)) as other:
        for name, path in checked_files(pack).items():
            extra = f", {more[name]}" if name in more else ""
            read = f"SELECT * FROM read_csv(?, header=true, {options}{extra})"
            other.write_table(name, reader.sql(read, params=[str(path)]).to_arrow_table(), mode="replace")
        return {qid: truth.value for qid, truth in compute_truths(pack, other).items()}


def test_a_truth_judges_an_answer_to_its_question(lake: Lake) -> None:
    gentoo = next(question for question in PACK.questions if question.id == "penguins-gentoo-mass")
    truth = compute_truths(PACK, lake, [gentoo])[gentoo.id]
    assert truth.judge("Gentoo penguins weigh about 5,076 grams on average [SQL].").right


def test_building_twice_gives_the_same_rows(lake: Lake, tmp_path: Path) -> None:
    with build_lake(PACK, tmp_path) as again:
        counts = {info.name: info.row_count for info in again.datasets()}
    assert counts == {info.name: info.row_count for info in lake.datasets()}


# --- a bad pack is refused, saying what is wrong -------------------------------------------


def _write_pack(directory: Path, questions: str, *, dataset: str | None = None) -> Path:
    (directory / "things.csv").write_text("id,colour,size\n1,red,3\n2,blue,NA\n", encoding="utf-8")
    sha = file_sha256(directory / "things.csv")
    dataset = dataset or f"things:\n    file: things.csv\n    sha256: {sha}\n"
    path = directory / "pack.yaml"
    path.write_text(
        "name: tiny\ntolerance: {abs: 0.5}\ntags: {filter: filters}\n"
        f"datasets:\n  {dataset}questions:\n{questions}",
        encoding="utf-8",
    )
    return path


GOOD = """\
  - id: red-size
    pass: 1
    text: How big is the red one?
    truth: SELECT TRY_CAST(size AS INTEGER) FROM things WHERE colour = 'red'
    kind: number
    tags: [filter]
"""


def _load_error(path: Path) -> str:
    with pytest.raises(UserError) as caught:
        load_pack(path)
    return caught.value.message


def test_a_small_pack_loads(tmp_path: Path) -> None:
    assert isinstance(load_pack(_write_pack(tmp_path, GOOD)), Pack)


def test_invalid_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD + "  - {id: [\n")
    assert _load_error(path).startswith(f"{path}: line ")


def test_an_unknown_key_is_named_with_its_path(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD + "    colour: red\n")
    assert _load_error(path) == f"{path}: questions.0.colour: unknown key"


def test_an_undeclared_tag_is_refused(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD.replace("[filter]", "[filter, join]"))
    assert "unknown tag(s) join; declare them under tags" in _load_error(path)


def test_an_id_used_twice_is_refused(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD + GOOD.replace("How big", "What size"))
    assert "id 'red-size' is used twice" in _load_error(path)


def test_a_tolerance_on_a_text_question_is_refused(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD.replace("kind: number", "kind: text\n    tolerance: {abs: 1}"))
    assert "a tolerance applies to kind number only" in _load_error(path)


def test_a_truth_over_no_dataset_of_the_pack_is_refused(tmp_path: Path) -> None:
    path = _write_pack(tmp_path, GOOD.replace("FROM things", "FROM stuff"))
    assert "the truth SQL reads no dataset of the pack (stuff)" in _load_error(path)


def test_a_file_that_changed_is_refused(tmp_path: Path) -> None:
    pack = load_pack(_write_pack(tmp_path, GOOD))
    (tmp_path / "things.csv").write_text("id,colour,size\n1,red,4\n", encoding="utf-8")
    with pytest.raises(UserError, match="dataset files differ from the pack: things"):
        checked_files(pack)


def test_a_package_not_installed_names_the_install_command(tmp_path: Path) -> None:
    dataset = f"things:\n    package: agentlake_no_such_data\n    file: t.csv\n    sha256: '{'0' * 64}'\n"
    pack = load_pack(_write_pack(tmp_path, GOOD, dataset=dataset))
    with pytest.raises(UserError) as caught:
        dataset_file(pack, "things")
    assert caught.value.message.endswith(INSTALL_HINT)


def test_a_truth_of_several_rows_is_refused_naming_the_question(tmp_path: Path) -> None:
    pack = load_pack(_write_pack(tmp_path, GOOD.replace(" WHERE colour = 'red'", "")))
    with build_lake(pack, tmp_path / "lake") as lake, pytest.raises(UserError) as caught:
        compute_truths(pack, lake)
    assert caught.value.message == (
        "question red-size: the truth SQL returns 2 row(s) of 1 column(s); it must return exactly one value"
    )


def test_a_null_truth_is_refused(tmp_path: Path) -> None:
    pack = load_pack(_write_pack(tmp_path, GOOD.replace("'red'", "'blue'")))
    with build_lake(pack, tmp_path / "lake") as lake, pytest.raises(UserError, match="returns NULL"):
        compute_truths(pack, lake)


# --- the held-out pack: new questions over the same tables ---------------------------------

HELDOUT = load_pack(PACK_FILE.parent / "heldout.yaml")


def test_the_held_out_pack_reads_the_same_files() -> None:
    assert HELDOUT.datasets == PACK.datasets


def test_no_held_out_question_is_asked_in_the_pack() -> None:
    assert set(_texts(HELDOUT.questions)) & set(_texts(PACK.questions)) == set()


# --- the second held-out pack: written before any run over it -------------------------------

HELDOUT_2 = load_pack(PACK_FILE.parent / "heldout2.yaml")


def test_the_second_held_out_pack_reads_the_same_files() -> None:
    assert HELDOUT_2.datasets == PACK.datasets


def test_the_second_held_out_pack_asks_at_least_sixty_questions() -> None:
    assert len(HELDOUT_2.questions) >= 60


def test_no_second_held_out_question_is_asked_before() -> None:
    before = set(_texts(PACK.questions)) | set(_texts(HELDOUT.questions))
    assert set(_texts(HELDOUT_2.questions)) & before == set()


# --- the third held-out pack: written before any run over it and before stop 40's changes -----

HELDOUT_3 = load_pack(PACK_FILE.parent / "heldout3.yaml")


def test_the_third_held_out_pack_reads_the_same_files() -> None:
    assert HELDOUT_3.datasets == PACK.datasets


def test_the_third_held_out_pack_asks_at_least_sixty_questions() -> None:
    assert len(HELDOUT_3.questions) >= 60


def test_no_third_held_out_question_is_asked_before() -> None:
    before = set(_texts(PACK.questions)) | set(_texts(HELDOUT.questions)) | set(_texts(HELDOUT_2.questions))
    assert set(_texts(HELDOUT_3.questions)) & before == set()


# --- the fourth held-out pack: written by a helper before any run over it, unread by the lead ----

HELDOUT_4 = load_pack(PACK_FILE.parent / "heldout4.yaml")


def test_the_fourth_held_out_pack_reads_the_same_files() -> None:
    assert HELDOUT_4.datasets == PACK.datasets


def test_the_fourth_held_out_pack_asks_at_least_sixty_questions() -> None:
    assert len(HELDOUT_4.questions) >= 60


@pytest.mark.parametrize("pass_", [1, 2])
def test_each_pass_of_the_fourth_held_out_pack_has_at_least_32_questions(pass_: int) -> None:
    assert len(HELDOUT_4.questions_of(pass_)) >= 32


def test_the_fourth_held_out_pack_asks_as_many_questions_in_each_pass() -> None:
    assert len(HELDOUT_4.questions_of(1)) == len(HELDOUT_4.questions_of(2))


def test_each_pass_2_question_of_the_fourth_pack_follows_its_pass_1_sibling() -> None:
    """Siblings sit side by side (pass 1, then pass 2) and read the same tables."""
    questions = HELDOUT_4.questions
    pairs = [
        (first.pass_, second.pass_, HELDOUT_4.datasets_of(first) == HELDOUT_4.datasets_of(second))
        for first, second in zip(questions[::2], questions[1::2], strict=True)
    ]
    assert [pair for pair in pairs if pair != (1, 2, True)] == []


def test_no_fourth_held_out_question_is_asked_before() -> None:
    before = {text for pack in (PACK, HELDOUT, HELDOUT_2, HELDOUT_3) for text in _texts(pack.questions)}
    assert set(_texts(HELDOUT_4.questions)) & before == set()


@pytest.mark.parametrize("variant", sorted(READS))
def test_the_fourth_packs_truths_hold_however_ingest_types_the_columns(
    lake: Lake, variant: str, tmp_path: Path
) -> None:
    truths = {qid: truth.value for qid, truth in compute_truths(HELDOUT_4, lake).items()}
    expected = {qid: pytest.approx(v) if isinstance(v, float) else v for qid, v in truths.items()}
    assert _truths_read_as(HELDOUT_4, variant, tmp_path) == expected


HELD_OUT = [
    (pack, question) for pack in (HELDOUT, HELDOUT_2, HELDOUT_3, HELDOUT_4) for question in pack.questions
]
HELD_OUT_IDS = [f"{pack.name}-{question.id}" for pack, question in HELD_OUT]


@pytest.mark.parametrize(("pack", "question"), HELD_OUT, ids=HELD_OUT_IDS)
def test_each_held_out_truth_is_one_value_on_the_packs_lake(
    lake: Lake, pack: Pack, question: Question
) -> None:
    value = compute_truths(pack, lake, [question])[question.id].value
    assert isinstance(value, float if question.kind == "number" else str)


@pytest.mark.parametrize(("pack", "question"), HELD_OUT, ids=HELD_OUT_IDS)
def test_no_held_out_truth_hides_among_what_its_question_names(
    lake: Lake, pack: Pack, question: Question
) -> None:
    value = compute_truths(pack, lake, [question])[question.id].value
    named = {v for number in stated_numbers(question.text) for v in number.values}
    assert value not in named
