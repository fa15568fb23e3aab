"""``agentlake run``: staffers x scenarios x repetitions, in batches, learning in between.

A thin door onto ``agentlake.scenarios.runner``: it parses options, prints progress as days
finish, then the leaderboard and where the report is.
"""

from __future__ import annotations

from enum import StrEnum

import typer

from agentlake.cli.output import Format, format_option


class BackendChoice(StrEnum):
    inline = "inline"
    process = "process"
    ray = "ray"


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def run(
    scenarios: list[str] = typer.Option(
        ["builtin"],
        "--scenarios",
        "-s",
        help="Scenario files or directories (repeat or comma-separate); 'builtin' is the built-in pack.",
    ),
    staffers: list[str] = typer.Option(
        ["rules-learning,rules-static"],
        "--staffers",
        "-t",
        help="Built-in staffer names or profile YAML files (comma-separated).",
    ),
    batches: int = typer.Option(3, "--batches", "-b", min=1, help="Batches; learning happens between them."),
    repeat: int = typer.Option(
        1, "--repeat", "-k", min=1, help="Repetitions of every day per batch (k of pass^k)."
    ),
    backend: BackendChoice = typer.Option(
        BackendChoice.inline,
        "--backend",
        help="Where days run: inline, process (a local process pool) or ray.",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="Ray cluster to join (default: start a local Ray)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", "-w", min=1, help="Worker processes / Ray CPUs (default: all cores)."
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        "-j",
        help="Days run at once in this process (backend inline), sharing one copy of each embedded "
        "model; results and learning are the same as one at a time. Default: two a core (at most 8) "
        "for model staffers, one a core for rules staffers; capped by free memory.",
    ),
    run_id: str | None = typer.Option(
        None, "--run-id", help="Name of the run directory under runs_dir (default: a timestamp)."
    ),
    semantic_lessons: bool = typer.Option(
        False,
        "--semantic-lessons",
        help="Also rank lessons by embedding similarity (loads the local embedding model).",
    ),
    feedback: list[str] = typer.Option(
        [],
        "--feedback",
        help="What clients say when they refuse someone: explicit (the rule and value), vague (their own "
        "words) or silent (accepted or not); comma-separate for one arm per mode. Default: each "
        "scenario's own feedback key (explicit when unset).",
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue the interrupted run --run-id names, with the options it was started with: "
        "its finished days are kept, the rest run.",
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Validate scenarios, staffers, models and the lake; print the plan; run nothing.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-day progress lines."),
    fmt: Format = format_option(
        "Output: table (progress, the leaderboard, where the results are), json (the run's summary: "
        "leaderboard, learning curve, recovery, lessons, paths) or csv (the leaderboard's rows); "
        "with json or csv the progress lines go to stderr. With --check: the plan and its pools."
    ),
) -> None:
    """Run scenario days with staffers in batches, learn between batches, write results, leaderboard and report."""
    from agentlake.cli.leaderboard import print_board
    from agentlake.cli.output import console, err_console, print_json, render_rows
    from agentlake.scenarios.feasibility import EventPool
    from agentlake.scenarios.metrics import (
        LEADERBOARD_COLUMNS,
        leaderboard,
        leaderboard_rows,
        learning_curve,
    )
    from agentlake.scenarios.plan import RunRequest, prepare_run
    from agentlake.scenarios.recovery import recovery_line
    from agentlake.scenarios.results import read_results
    from agentlake.scenarios.runner import run_request

    request = RunRequest(
        scenarios=_split(scenarios),
        staffers=_split(staffers),
        batches=batches,
        repeat=repeat,
        backend=backend.value,
        ray_address=ray_address,
        workers=workers,
        semantic_lessons=semantic_lessons,
        feedback=_split(feedback) or None,
        concurrency=concurrency,
    )
    if check:
        from agentlake.scenarios.feasibility import lake_pools

        plan = prepare_run(request)
        pools = lake_pools(plan.scenarios)
        if fmt is Format.json:
            print_json({"ok": True, "plan": plan.describe(), "pools": [p.model_dump() for p in pools]})
        elif fmt is Format.csv:
            render_rows(list(EventPool.model_fields), [list(p.model_dump().values()) for p in pools], fmt)
        else:
            _print_pools(pools)
            console.print("ok: " + plan.describe(), highlight=False, markup=False)
        return

    # Progress is for people: on stdout beside the table, on stderr beside machine output.
    shown = console if fmt is Format.table else err_console

    def progress(p) -> None:  # a runner.Progress
        shown.print(
            f"batch {p.batch}/{p.batches} [{p.done}/{p.total}] {p.staffer} {p.scenario} r{p.repetition}: "
            f"{p.filled}/{p.requested} filled ({p.seconds:.1f} s)",
            highlight=False,
            markup=False,
        )

    summary = run_request(request, run_id=run_id, on_progress=None if quiet else progress, resume=resume)
    results = read_results(summary.run_dir)
    if fmt is Format.json:
        print_json(summary.model_dump(mode="json"))
        return
    if fmt is Format.csv:
        rows = leaderboard_rows(leaderboard(results), learning_curve(results))
        render_rows(LEADERBOARD_COLUMNS, rows, fmt)
        return
    print_board(leaderboard_rows(leaderboard(results), learning_curve(results)), f"run {summary.run_id}")
    for arm, total in summary.recovery_by_arm.items():
        console.print(recovery_line(arm, total), highlight=False, markup=False)
    console.print(
        f"{summary.results} judged events in {summary.seconds:.1f} s\nresults: {summary.run_dir}\nreport:  {summary.report}",
        highlight=False,
        markup=False,
    )


def _print_pools(pools) -> None:  # feasibility.EventPool list
    from rich import box
    from rich.table import Table

    from agentlake.cli.output import console

    table = Table(title="candidate pools on this lake", box=box.SIMPLE_HEAD, pad_edge=False)
    for name, width in (("scenario", 20), ("ev", 4), ("role", 13), ("place", 13)):
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=width)
    for name in ("need", "stated", "ok"):
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    for p in pools:
        place = p.place.replace(" mi", "")
        ok = f"{p.acceptable}{'' if p.solvable else ' (!)'}"
        table.add_row(p.scenario, p.event_id, p.role, place, str(p.count), str(p.stated), ok)
    console.print(table)
    console.print(
        "need: the count; stated: workers meeting the order as written; ok: those the client would also take "
        "(bookings ignored); (!) fewer than the count",
        style="dim",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("run")(run)
