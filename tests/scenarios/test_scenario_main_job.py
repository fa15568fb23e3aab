"""The main job (``make demo``): the index builds in the background while the rules staffers run,
every step says how long it took, and an interrupted index build keeps what it embedded."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from agentlake.cli.main import main
from agentlake.llm.packaged import PACKAGED_MODELS, installed
from agentlake.settings import Settings, load_settings


@pytest.fixture
def small_lake(tmp_path: Path) -> Settings:
    """A 300-worker lake in this test's data dir."""
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    settings = load_settings(runs_dir=str(tmp_path / "runs"))
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(300, seed=3))
    return settings


@pytest.mark.slow
def test_a_cancelled_index_build_keeps_its_chunks_and_the_next_build_finishes_it(
    small_lake: Settings,
) -> None:
    from agentlake.errors import RunError
    from agentlake.lake import Lake
    from agentlake.lake.background_index import BackgroundIndex
    from agentlake.lake.search import hybrid_search

    with Lake.open(small_lake) as lake:
        first = BackgroundIndex(lake, "workers", "resume_text", chunk=64).start()
        while first.progress().done == 0 and not first.finished:
            first.wait(0.05)
        first.cancel()
        stopped = first.progress()
        assert stopped.phase == "cancelled"
        assert 0 < stopped.done < stopped.total == 300
        with pytest.raises(RunError, match="cancelled"):
            first.result()

        second = BackgroundIndex(lake, "workers", "resume_text", chunk=64).start()
        assert second.wait(120)
        built = second.result()
        done = second.progress()
        assert done.phase == "done"
        assert done.done == done.total == 300
        # Only what the cancelled build had not embedded is embedded again.
        assert done.embedded == 300 - stopped.done
        assert built is not None
        assert built.index.row_count == 300
        assert hybrid_search(lake, "workers", "forklift driver", k=3)

        # Fresh index: nothing is embedded and nothing is rebuilt.
        third = BackgroundIndex(lake, "workers", "resume_text").start()
        assert third.wait(60)
        assert third.result() is None
        assert third.progress().embedded == 0


@pytest.mark.slow
def test_the_rules_staffers_run_while_the_index_builds_and_every_step_is_timed(tmp_path: Path) -> None:
    from agentlake.embed import get_embedder
    from agentlake.lake.background_index import IndexProgress
    from agentlake.scenarios.main_job import RunDone, SearchExample, StepDone, run_main_job
    from agentlake.scenarios.runner import Progress

    events: list[object] = []
    first_day = threading.Event()

    def on_event(event: object) -> None:
        events.append(event)
        if isinstance(event, Progress):
            first_day.set()

    class HeldEmbedder:
        """The real model, held back until the pack's first day ends: if the job waited for the
        index before the pack, the gate would time out and the step times below would show it."""

        def __init__(self) -> None:
            self.inner = get_embedder(None, settings)
            self.name = self.inner.name

        @property
        def dimension(self) -> int:
            return self.inner.dimension

        def embed(self, texts):
            first_day.wait(60)
            return self.inner.embed(texts)

    settings = load_settings(runs_dir=str(tmp_path / "runs"))
    job = run_main_job(
        settings, workers=300, seed=3, batches=1, llm_staffer=None, on_event=on_event, embedder=HeldEmbedder()
    )
    steps = {step.name: step for step in job.steps}
    assert list(steps) == [
        "dataset",
        "example SQL",
        "model check",
        "scenario pack",
        "index (background)",
        "example search",
    ]
    assert steps["dataset"].summary == "generated 300 workers (seed 3)"
    assert steps["index (background)"].summary.startswith(
        "indexed workers.resume_text: 300 embedded, 0 cached"
    )
    # The pack did not wait for the index: it began after the index started and before it ended.
    index, pack = steps["index (background)"], steps["scenario pack"]
    assert index.started_s <= pack.started_s < index.started_s + index.seconds
    assert all(step.seconds >= 0 for step in job.steps)
    assert job.seconds >= pack.seconds
    assert job.demo.index is not None
    assert job.demo.index.embedded == 300
    assert job.run.results > 0
    assert any(isinstance(e, SearchExample) for e in events)
    days = [e for e in events if isinstance(e, Progress)]
    assert len(days) == 2 * 8, "one line per staffer and day of the built-in pack"
    assert any(isinstance(e, IndexProgress) and e.phase == "embedding" for e in events)
    assert [e.label for e in events if isinstance(e, RunDone)] == ["scenario pack"]
    assert isinstance(events[-1], StepDone)
    assert events[-1].name == "example search"

    again = run_main_job(
        load_settings(runs_dir=str(tmp_path / "runs")), workers=300, batches=1, llm_staffer=None
    )
    summaries = {step.name: step.summary for step in again.steps}
    assert summaries["dataset"] == "workers already in the lake (300 rows)"
    assert summaries["index (background)"] == "workers.resume_text up to date: nothing to embed"
    assert again.demo.index is None


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the 0.5B fills 8 events: minutes on a busy 2-core machine
@pytest.mark.skipif(
    not installed(PACKAGED_MODELS["qwen2.5-coder-0.5b"]),
    reason="the 0.5B is not installed (make test installs it)",
)
def test_demo_prints_each_step_with_its_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        main(["demo", "--workers", "300", "--seed", "3", "--batches", "2"])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "done dataset in" in out
    assert "done scenario pack in" in out
    assert "done index (background) in" in out
    assert "the main job took" in out
    assert "took (s)" in out
    assert "example search" in out
    # The embedded model (the 0.5B, in this process) staffed the reduced pack beside the rules,
    # and its learning curve (one fill rate per batch) is in the leaderboard printed.
    assert "done qwen-0.5b-learning in" in out
    assert "qwen-0.5b-learning on each client's first event of its first day" in out
    assert re.search(r"qwen-0\.5b-learning .*\d+% -> \d+%", out), out[-3000:]
    assert "No LLM staffer ran" not in out


def test_a_budget_runs_the_batches_of_the_embedded_staffer_that_fit() -> None:
    from agentlake.scenarios.main_job import EMBEDDED_BATCH_S, batches_that_fit

    assert batches_that_fit(3, 10 * EMBEDDED_BATCH_S, load=1.0, cores=2) == 3
    # At load 4.5 on 2 cores a batch takes 2.5x as long: 140 s left hold two of them.
    assert batches_that_fit(3, 140.0, load=4.5, cores=2) == 2
    assert batches_that_fit(3, EMBEDDED_BATCH_S / 2, load=0.0, cores=2) == 0


@pytest.mark.slow
@pytest.mark.skipif(
    not installed(PACKAGED_MODELS["qwen2.5-coder-0.5b"]),
    reason="the 0.5B is not installed (make test installs it)",
)
def test_an_embedded_staffer_that_does_not_fit_the_budget_is_skipped_and_says_so(tmp_path: Path) -> None:
    from agentlake.scenarios.main_job import Notice, run_main_job

    events: list[object] = []
    settings = load_settings(runs_dir=str(tmp_path / "runs"))
    job = run_main_job(settings, workers=300, seed=3, batches=2, budget_s=1.0, on_event=events.append)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any(
        re.match(
            r"qwen-0\.5b-learning is skipped: 0 s of the budget left, and a batch takes about \d+ s", text
        )
        for text in notices
    ), notices
    steps = {step.name: step.summary for step in job.steps}
    assert steps["qwen-0.5b-learning"] == "skipped: it did not fit in the budget"
    assert job.local is None
