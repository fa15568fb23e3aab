"""The data-questions domain end to end: answers and feedback become lessons the next answers use.

A real lake on disk, a real lesson store, the observer in memory and a scripted model: the
learner reads what was recorded (``ask.answer``, ``ask.feedback``) and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.agents.ask import ask
from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.learn import LessonStore, learn_cycle
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted
from agentlake.observe import MemorySink, Observer
from agentlake.questions.domain import action_of
from agentlake.questions.feedback import Feedback, give_feedback
from agentlake.settings import Settings

# body_mass_g keeps a value that is no number ("unknown"): the column stays text.
PENGUINS = """species,island,body_mass_g,year
Adelie,Torgersen,3750,2007
Adelie,Torgersen,unknown,2007
Gentoo,Biscoe,4500,2007
Gentoo,Biscoe,5700,2008
Chinstrap,Dream,3500,2008
"""


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, default_model="none", executor_model=None, llm_max_retries=0)


@pytest.fixture
def lake(tmp_path: Path, settings: Settings) -> Iterator[Lake]:
    csv = tmp_path / "penguins.csv"
    csv.write_text(PENGUINS)
    with Lake.open(settings, path=tmp_path / "lake.duckdb") as opened:
        opened.ingest(csv, "penguins")
        yield opened


@pytest.fixture
def store(tmp_path: Path, settings: Settings) -> Iterator[LessonStore]:
    with LessonStore.open(settings, path=tmp_path / "lessons.duckdb", embedder=False) as opened:
        yield opened


@pytest.fixture
def observer() -> Observer:
    return Observer(MemorySink(), ring_size=1000)


@pytest.fixture
def model() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("data-asker")
    register_scripted("data-asker", provider)
    yield provider
    unregister_scripted("data-asker")


def _plan(sql: str) -> str:
    return json.dumps({"route": "sql", "sql": sql})


def _ask(question: str, lake: Lake, observer: Observer, store: LessonStore | bool) -> object:
    return ask(question, lake=lake, model="scripted:data-asker", observer=observer, lessons=store)


def _learn(store: LessonStore, observer: Observer, lake: Lake) -> None:
    learn_cycle(store, observer.query(limit=1000, order="asc"), lake=lake, maintain=False, promote=False)


def _gentoo_confirmed(lake: Lake, store: LessonStore, observer: Observer, model: ScriptedProvider) -> None:
    """Ask how many Gentoo penguins there are, mark the answer right, learn: one playbook."""
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"))
    model.enqueue("2 [SQL].")
    first = _ask("How many Gentoo penguins are there?", lake, observer, store)
    give_feedback(Feedback(answer_id=first.id, right=True), observer=observer)
    _learn(store, observer, lake)


def test_a_right_answer_becomes_a_playbook_for_its_table(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"))
    model.enqueue("2 [SQL].")
    answer = _ask("How many Gentoo penguins are there?", lake, observer, store)
    give_feedback(Feedback(answer_id=answer.id, right=True), observer=observer)

    _learn(store, observer, lake)

    (lesson,) = store.list(domain="data")
    assert action_of(lesson).sql == "SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"


def test_a_playbook_names_the_feedback_op_it_came_from(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"))
    model.enqueue("2 [SQL].")
    answer = _ask("How many Gentoo penguins are there?", lake, observer, store)
    recorded = give_feedback(Feedback(answer_id=answer.id, right=True), observer=observer)

    _learn(store, observer, lake)

    assert store.list(domain="data")[0].evidence_op_ids == [recorded.op_id]


def test_a_wrong_answer_with_the_expected_value_is_corrected_by_a_rule_and_checked(
    lake, store, observer, model
) -> None:
    model.enqueue(_plan("SELECT max(body_mass_g) AS n FROM penguins"))
    model.enqueue("The heaviest is unknown [SQL].")
    answer = _ask("What is the heaviest body mass?", lake, observer, store)
    give_feedback(Feedback(answer_id=answer.id, right=False, expected="5700"), observer=observer)

    _learn(store, observer, lake)

    kinds = {action_of(lesson).kind: action_of(lesson) for lesson in store.list(domain="data")}
    assert kinds["playbook"].sql == "SELECT max(TRY_CAST(body_mass_g AS DOUBLE)) AS n FROM penguins"


def test_the_fix_of_a_corrected_answer_is_kept_as_a_cast(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT max(body_mass_g) AS n FROM penguins"))
    model.enqueue("The heaviest is unknown [SQL].")
    answer = _ask("What is the heaviest body mass?", lake, observer, store)
    give_feedback(Feedback(answer_id=answer.id, right=False, expected="5700"), observer=observer)

    _learn(store, observer, lake)

    casts = [action_of(lesson) for lesson in store.list(domain="data") if action_of(lesson).kind == "cast"]
    assert [(cast.column, cast.cast) for cast in casts] == [("body_mass_g", "DOUBLE")]


def test_a_wrong_answer_no_rule_can_correct_becomes_a_note(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    model.enqueue("5 [SQL].")
    answer = _ask("How many penguins were weighed?", lake, observer, store)
    give_feedback(
        Feedback(answer_id=answer.id, right=False, expected="4", note="unknown is no weight"),
        observer=observer,
    )

    _learn(store, observer, lake)

    (note,) = store.list(domain="data")
    assert note.action.endswith("the right answer is 4. unknown is no weight")


def test_a_name_the_database_corrected_becomes_a_rename(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguin"))
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    model.enqueue("5 [SQL].")
    _ask("How many penguins are there?", lake, observer, store)

    _learn(store, observer, lake)

    (rename,) = [action_of(lesson) for lesson in store.list(domain="data")]
    assert (rename.wrong, rename.right) == ("penguin", "penguins")


def test_the_next_alike_question_gets_the_playbook_as_a_worked_example(lake, store, observer, model) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Adelie' AND island = 'Dream'"))
    model.enqueue("0 [SQL].")

    # Not of the playbook's shape (it names an island too): the model plans, shown the playbook.
    _ask("How many Adelie penguins are there on Dream island?", lake, observer, store)

    shown = [m.content for m in model.history[-2][0]]
    assert "How many Gentoo penguins are there?" in shown


def test_a_question_of_the_playbook_s_shape_runs_its_query_with_the_question_s_values(
    lake, store, observer, model
) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    model.enqueue("2 [SQL].")

    answer = _ask("How many Adelie penguins are there?", lake, observer, store)

    assert answer.sql == "SELECT COUNT(*) AS n FROM penguins WHERE species = 'Adelie'"


def test_a_question_of_the_playbook_s_shape_asks_the_model_for_no_plan(lake, store, observer, model) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    model.enqueue("2 [SQL].")

    _ask("How many Adelie penguins are there?", lake, observer, store)

    assert len(model.history) == 3  # the first question's plan and answer, then this answer only


def test_an_answer_following_a_playbook_cites_it(lake, store, observer, model) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Adelie'"))
    model.enqueue("2 [SQL].")

    second = _ask("How many Adelie penguins are there?", lake, observer, store)

    assert second.lessons_cited == second.lessons != []


def test_a_learned_rename_is_written_by_code_before_the_query_runs(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguin"))
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    model.enqueue("5 [SQL].")
    _ask("How many penguins are there?", lake, observer, store)
    _learn(store, observer, lake)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguin WHERE island = 'Dream'"))
    model.enqueue("1 [SQL].")

    answer = _ask("How many penguins live on Dream?", lake, observer, store)

    assert answer.sql == "SELECT count(*) AS n FROM penguins WHERE island = 'Dream'"


def test_the_learning_off_twin_is_given_nothing(lake, store, observer, model) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Adelie'"))
    model.enqueue("2 [SQL].")

    twin = _ask("How many Adelie penguins are there?", lake, observer, False)

    assert twin.lessons == []


def test_feedback_states_the_answers_outcome_for_measurement(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    model.enqueue("5 [SQL].")
    answer = _ask("How many penguins are there?", lake, observer, store)
    give_feedback(Feedback(answer_id=answer.id, right=False, expected="4"), observer=observer)

    _learn(store, observer, lake)

    assert store.query("SELECT run_id, success FROM outcomes") == [(answer.id, False)]


def test_feedback_on_an_unknown_answer_says_how_to_list_answers(observer) -> None:
    with pytest.raises(UserError, match="agentlake ops query --endpoint ask.answer"):
        give_feedback(Feedback(answer_id="nope", right=True), observer=observer)


def test_a_right_answer_has_no_expected_value(observer) -> None:
    with pytest.raises(UserError, match="--wrong"):
        give_feedback(Feedback(answer_id="x", right=True, expected="3"), observer=observer)


def test_a_playbook_whose_query_no_longer_runs_is_retired_with_the_reason(
    lake, store, observer, model, tmp_path
) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Dream'"))
    model.enqueue("1 [SQL].")
    first = _ask("How many penguins live on Dream?", lake, observer, store)
    give_feedback(Feedback(answer_id=first.id, right=True), observer=observer)
    _learn(store, observer, lake)
    (playbook,) = store.list(domain="data")
    changed = tmp_path / "changed.csv"
    changed.write_text("species,place,body_mass_g,year\nAdelie,Dream,3750,2007\n")
    lake.ingest(changed, "penguins", mode="replace")
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    model.enqueue("1 [SQL].")
    _ask("How many penguins are there?", lake, observer, store)

    _learn(store, observer, lake)

    last = store.history(playbook.id)[-1]
    assert (last.lesson.status, last.reason.split(":")[0]) == (
        "retired",
        "its query no longer runs on penguins",
    )


def test_a_playbook_an_answer_was_worse_with_is_retired_at_once(lake, store, observer, model) -> None:
    _gentoo_confirmed(lake, store, observer, model)
    (playbook,) = store.list(domain="data")
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE species = 'Adelie'"))
    model.enqueue("2 [SQL].")
    misled = _ask("How many Adelie penguins are there?", lake, observer, store)
    give_feedback(Feedback(answer_id=misled.id, right=False, expected="2"), observer=observer)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Dream'"))
    model.enqueue("1 [SQL].")
    twin = _ask("How many penguins live on Dream?", lake, observer, False)
    give_feedback(Feedback(answer_id=twin.id, right=True), observer=observer)

    learn_cycle(store, observer.query(limit=1000, order="asc"), lake=lake, promote=False)

    assert store.get(playbook.id).status == "retired"


def test_a_note_is_given_only_to_nearly_the_same_question(lake, store, observer, model) -> None:
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE year = 2007"))
    model.enqueue("2 [SQL].")
    answer = _ask("How many penguins were weighed in 2007?", lake, observer, store)
    give_feedback(Feedback(answer_id=answer.id, right=False, expected="1"), observer=observer)
    _learn(store, observer, lake)
    model.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE year = 2008"))
    model.enqueue("2 [SQL].")

    other = _ask("How many penguins were weighed in 2008?", lake, observer, store)

    assert other.lessons == []
