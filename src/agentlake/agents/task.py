"""``fill``: the one library call behind ``agentlake fill`` (and the gateway's fill route).

Owns putting a single fill together from settings: reading the order (``order_reader``: the
grammar, else a model; an order that lacks what it needs raises ``OrderQuestion``), opening the
lake read-only, the lesson store if there is one, the observer and the model-call recording, the
policy; running it (its ``task.fill`` op states how the run ended, which the learner reads
for lesson measurement); closing what it opened. It does not own any policy's logic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentlake.agents.outcome import TaskOutcome, TurnRecord, new_run_id
from agentlake.agents.policy import Policy, RunContext, get_policy
from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.observe import event, get_observer
from agentlake.observe.model import exception_text
from agentlake.settings import load_settings
from agentlake.workforce.order import FillOrder, read_whole
from agentlake.workforce.order_words import OrderQuestion, ReadOrder

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer
    from agentlake.settings import Settings


def fill(
    order: FillOrder | str,
    *,
    policy: str | Policy = "rules",
    settings: Settings | None = None,
    lake: Lake | None = None,
    lessons: LessonStore | bool | None = True,
    observer: Observer | None = None,
    on_turn: Callable[[TurnRecord], None] | None = None,
    client_id: str | None = None,
    shift_start: datetime | None = None,
    shift_end: datetime | None = None,
    requirements: Sequence[str] = (),
    radius_miles: float | None = None,
    rescue: bool = True,
    overseer: bool = False,
    run_id: str | None = None,
    agent_id: str = "agent",
    now: datetime | None = None,
    **policy_options: Any,
) -> TaskOutcome:
    """Fill one order and return its outcome.

    ``order``: a ``FillOrder`` or text, in the grammar's form ("3 x Welder in Cleveland, OH for
    Riverfront Steel at 08:00") or in words ("need two welders near Cleveland OH tomorrow
    morning"), which a model reads (``order_reader.read_order``: the ``executor_model`` policy
    option, else the settings' model; ``now``: when 'tomorrow' counts from); the outcome's
    ``reading`` says what was understood. The keyword fields override what the text says
    (``requirements`` are added).
    ``policy``: ``rules`` (default, no LLM), ``llm`` (``policy_options``: ``executor_model``,
    ``reviewer_model``, ``turn_budget``, ``escalation_model``) or a ``Policy`` object.
    ``lake``: an open lake to use; otherwise ``settings.lake_path`` is opened read-only.
    ``lessons``: ``True`` uses the lesson store in ``data_dir`` if one exists (structured
    retrieval, no embedding model), ``False``/``None`` none, or a store object. ``observer``: default the
    process-wide one; model calls made for this fill are recorded into it.

    Raises ``OrderQuestion`` (a ``UserError``: the question back, with the reading) for an
    order in words that lacks a role, count or place or names a role the catalogue lacks;
    ``UserError`` for a bad order, a missing lake, an unknown city or policy, or no model for
    ``llm``; ``RunError`` when running fails.
    """
    settings = settings or (lake.settings if lake is not None else load_settings())
    reader = _reader(order, policy_options.get("executor_model"), settings, now)
    reading = None
    if isinstance(order, str) and reader is None:
        # The grammar's form, or no model to read words: no lake needed to read it.
        reading = _read(order, None, settings, lake, None, now)
    chosen = get_policy(policy, **policy_options) if isinstance(policy, str) else policy
    opened: list[Any] = []
    uninstall: Callable[[], None] | None = None
    try:
        if lake is None:
            lake = Lake.open(settings, read_only=True)
            opened.append(lake)
        if observer is None:
            observer = get_observer(settings)
        if isinstance(order, str):
            # Words: a model reads them, with the lake's cities beside the reference ones.
            reading = reading or _read(order, reader, settings, lake, observer, now)
        asked = reading.order if reading is not None and reading.order is not None else order
        order = _order(asked, client_id, shift_start, shift_end, requirements, radius_miles)
        store = _lesson_store(lessons, settings, opened)
        if chosen.name == "llm":
            # Only an LLM policy loads the LLM layer (start-up time of a rules fill).
            from agentlake.observe import install_llm_recording

            uninstall = install_llm_recording(observer)
        run_id = run_id or new_run_id()
        ctx = RunContext(
            lake=lake,
            lessons=store,
            run_id=run_id,
            observer=observer,
            on_turn=on_turn,
            rescue=rescue,
            overseer=overseer,
            settings=settings,
            agent_id=agent_id,
        )
        try:
            outcome = chosen.run(order, ctx)
        except Exception as exc:
            # A fill that fails part way is still an op: record it failed (the policy records
            # only fills that end), then let the error reach the caller.
            event(
                "task.fill",
                source="agent",
                observer=observer,
                agent_id=agent_id,
                input_summary=order.describe(),
                success=False,
                error=exception_text(exc),
                run_id=run_id,
            )
            raise
        outcome.reading = reading
        return outcome
    finally:
        if uninstall is not None:
            uninstall()
        for thing in reversed(opened):
            thing.close()


def _reader(
    order: FillOrder | str, model: str | None, settings: Settings, now: datetime | None
) -> str | None:
    """The model that will read ``order``: ``None`` for an order object, text in the grammar's
    form (raising what the grammar raises for it) or when no model is configured."""
    if not isinstance(order, str) or read_whole(order, now=now) is not None:
        return None
    # Only an order in words loads the LLM layer (start-up time of a grammar-form fill).
    from agentlake.llm import default_model

    return model or default_model(settings, "executor_model")


def _read(
    text: str,
    model: str | None,
    settings: Settings,
    lake: Lake | None,
    observer: Observer | None,
    now: datetime | None,
) -> ReadOrder:
    """The order ``text`` says; a model call it takes is recorded in ``observer``."""
    from agentlake.agents.order_reader import read_order

    uninstall: Callable[[], None] | None = None
    if model is not None:
        from agentlake.observe import install_llm_recording

        uninstall = install_llm_recording(observer)
    try:
        reading = read_order(text, model=model, settings=settings, lake=lake, now=now)
    finally:
        if uninstall is not None:
            uninstall()
    if reading.order is None:
        raise OrderQuestion(reading)
    return reading


def _order(
    order: FillOrder | str,
    client_id: str | None,
    shift_start: datetime | None,
    shift_end: datetime | None,
    requirements: Sequence[str],
    radius_miles: float | None,
) -> FillOrder:
    overrides: dict[str, Any] = {}
    if client_id is not None:
        overrides["client_id"] = client_id
    if shift_start is not None:
        overrides["shift_start"] = shift_start
        overrides["shift_end"] = shift_end
    elif shift_end is not None:
        raise UserError("--shift-end needs --shift-start")
    if radius_miles is not None:
        overrides["radius_miles"] = radius_miles
    parsed = order if isinstance(order, FillOrder) else FillOrder.parse(order)
    if requirements:
        overrides["requirements"] = list(dict.fromkeys([*parsed.requirements, *requirements]))
    if not overrides:
        return parsed
    from pydantic import ValidationError

    try:
        return FillOrder.model_validate({**parsed.model_dump(), **overrides})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'order'}: {e['msg']}" for e in exc.errors())
        raise UserError(f"invalid order: {problems}") from None


def _lesson_store(
    lessons: LessonStore | bool | None, settings: Settings, opened: list[Any]
) -> LessonStore | None:
    if lessons is False or lessons is None:
        return None
    if lessons is not True:
        return lessons
    # The lesson store in PostgreSQL (database_url) or its DuckDB file, when there is one.
    path = None if settings.database_url is not None else settings.data_dir / settings.learn_file
    if path is not None and not path.exists():
        return None
    # Lazy (start-up time): the learning layer loads on first use.
    from agentlake.learn import LessonStore

    store = LessonStore.open(settings, path=path, embedder=False)
    opened.append(store)
    return store
