"""When a task's ops are durable: all together before the outcome is returned (the default),
or each turn's before the next turn (``acknowledge="turn"``). Real DuckDB op store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents_support import action

from agentlake.agents import LLMPolicy
from agentlake.errors import UserError
from agentlake.llm import FunctionProvider
from agentlake.observe import Observer, OpStore, install_llm_recording

FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}


@pytest.fixture
def store_observer(tmp_path: Path) -> Iterator[Observer]:
    observer = Observer(OpStore(tmp_path / "observe.duckdb"))
    uninstall = install_llm_recording(observer)
    yield observer
    uninstall()
    observer.close()


def _scripted(store: OpStore, replies: list[str], seen: list[int]) -> FunctionProvider:
    """A model that notes how many ops were durable when it was called, then answers."""

    def reply(messages: object, options: object) -> str:
        seen.append(store.count())
        return replies.pop(0)

    return FunctionProvider(reply, "ack-probe")


def _models(
    store: OpStore, qualified: list[int], seen: list[int]
) -> tuple[FunctionProvider, FunctionProvider]:
    executor = [
        action("tool_call", tool="find_workers", args=FIND),
        action("propose_done", worker_ids=qualified[:3]),
    ]
    reviewer = [action("critique", approve=True, notes="ok")]
    return _scripted(store, executor, seen), _scripted(store, reviewer, seen)


def test_a_tasks_ops_are_durable_together_when_the_outcome_returns(
    make_ctx, order, qualified, store_observer: Observer
) -> None:
    store: OpStore = store_observer.sink  # type: ignore[assignment]
    seen: list[int] = []
    commits = store.committed_batches
    executor, reviewer = _models(store, qualified, seen)

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx(observer=store_observer))

    assert outcome.success
    assert outcome.turns == 3
    assert seen == [0, 0, 0]  # nothing waited for a commit during the task
    endpoints = sorted(op.endpoint for op in store.query(limit=1000))
    assert endpoints == ["llm.chat"] * 3 + ["task.fill", "tool.find_workers"]
    assert store.committed_batches == commits + 1  # one group commit for the whole task
    assert store_observer.stats().total == 5  # and the live counters saw them at the exit


def test_acknowledge_turn_makes_each_turns_ops_durable_before_the_next_turn(
    make_ctx, order, qualified, store_observer: Observer
) -> None:
    store: OpStore = store_observer.sink  # type: ignore[assignment]
    seen: list[int] = []
    executor, reviewer = _models(store, qualified, seen)

    outcome = LLMPolicy(executor, reviewer, acknowledge="turn").run(order, make_ctx(observer=store_observer))

    assert outcome.success
    # Turn 1 (model call + find_workers) was durable before turn 2's model call; turn 2's
    # (model call) before the reviewer's turn; the task.fill op joined at the task's end.
    assert seen == [0, 2, 3]
    assert store.count() == 5


def test_acknowledge_is_checked() -> None:
    with pytest.raises(UserError, match="acknowledge must be"):
        LLMPolicy("scripted:x", acknowledge="never")  # type: ignore[arg-type]


def test_two_fills_at_once_in_one_process_record_each_model_call_once(lake, order, qualified) -> None:
    from agentlake.agents import fill
    from agentlake.observe import MemorySink

    both_running = threading.Barrier(2, timeout=20)
    calls: list[str] = []

    def models(name: str) -> tuple[FunctionProvider, FunctionProvider]:
        executor = [
            action("tool_call", tool="find_workers", args=FIND),
            action("propose_done", worker_ids=qualified[:3]),
        ]
        reviewer = [action("critique", approve=True, notes="ok")]

        def execute(messages: object, options: object) -> str:
            if len(executor) == 2:
                both_running.wait()  # both fills hold their model-call recording from here on
            calls.append(name)
            return executor.pop(0)

        def review(messages: object, options: object) -> str:
            calls.append(name)
            return reviewer.pop(0)

        return FunctionProvider(execute, f"{name}-exec"), FunctionProvider(review, f"{name}-review")

    sink = MemorySink()
    observer = Observer(sink)
    outcomes: dict[str, object] = {}

    def run(name: str) -> None:
        outcomes[name] = fill(
            order, policy=LLMPolicy(*models(name)), lake=lake, lessons=False, observer=observer
        )

    threads = [threading.Thread(target=run, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["first", "second"]
    assert len([op for op in sink.ops if op.source == "llm"]) == len(calls) == 6
