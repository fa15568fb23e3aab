"""``agentlake lessons``: list, inspect, retire, roll back, move and curate lessons; learn from
recent ops.

Each command opens the lesson store (``settings.learn_file``), calls one ``agentlake.learn``
function and renders the result. The store is one DuckDB file with one writer: while
``agentlake serve`` runs for the data directory, ``list`` and ``retire`` ask it (``GET
/lessons``, ``POST /lessons/{id}/retire``) and the other commands say that the server holds the
store. The reading commands (``list``, ``show``, ``history``, ``export``) open it read-only, so
reading never creates a store, and take ``--run RUN_ID [--staffer ARM]`` (a scenario run's
learning arm, ``scenarios.results.arm_lessons``) or ``--store FILE`` to read another store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from agentlake.cli.output import (
    JSON_ALIAS,
    Format,
    chosen_format,
    console,
    format_option,
    print_json,
    render_record,
    render_rows,
)

if TYPE_CHECKING:
    from agentlake.learn import Lesson, LessonEvent, LessonStore
    from agentlake.serving import Announcement

lessons_app = typer.Typer(
    help="Lessons learned from observed ops: list, show, history, retire, rollback, export, import, prune, "
    "promote, learn, status.",
    no_args_is_help=True,
)

_PAGE = 1000  # GET /lessons's largest page
_RUN = typer.Option(
    None,
    "--run",
    help="Read a scenario run's lessons instead: a run id under runs_dir, or its directory (read-only).",
)
_STAFFER = typer.Option(
    None,
    "--staffer",
    help="With --run: the learning staffer (arm) whose lessons to read, e.g. rules-learning or "
    "rules-learning@vague; default: the run's only learning staffer.",
)
_STORE = typer.Option(
    None,
    "--store",
    help="Read this lesson store file (.duckdb) instead, e.g. runs/<id>/lessons/<arm>.duckdb.",
)

_COLUMNS = [
    "id",
    "status",
    "confidence",
    "scope",
    "domain",
    "match",
    "trigger",
    "action",
    "helpful",
    "harmful",
    "source",
]


def _open(**kwargs: Any) -> LessonStore:
    from agentlake.learn import LessonStore
    from agentlake.settings import load_settings

    return LessonStore.open(load_settings(), **kwargs)


def _elsewhere(run: str | None, staffer: str | None, store: Path | None) -> Any:
    """The store ``--run``/``--staffer`` or ``--store`` name (a path or a ``PgSchema``); ``None``
    for the project's store. ``UserError`` for both, or ``--staffer`` without ``--run``."""
    from agentlake.errors import UserError

    if store is not None and run is not None:
        raise UserError("give --run (a run's lessons) or --store (a lesson file), not both")
    if staffer is not None and run is None:
        raise UserError("--staffer names a learning staffer of a run: give --run RUN_ID too")
    if store is not None:
        if not store.is_file():
            raise UserError(
                f"no lesson store at {store}; runs keep theirs in runs/<id>/lessons/<staffer>.duckdb"
            )
        return store
    if run is None:
        return None
    from agentlake.scenarios.results import arm_lessons, resolve_run_dir
    from agentlake.settings import load_settings

    settings = load_settings()
    return arm_lessons(resolve_run_dir(run, settings.runs_dir), staffer, settings)


@contextmanager
def _reading(where: Any, *, missing_ok: bool = False) -> Iterator[LessonStore | None]:
    """The store at ``where`` (the project's for ``None``) open read-only; with ``missing_ok``,
    ``None`` when the project has no store file yet (reading never creates one)."""
    from agentlake.settings import load_settings

    settings = load_settings()
    default = settings.data_dir / settings.learn_file
    if where is None and missing_ok and settings.database_url is None and not default.exists():
        yield None
        return
    with _open(path=where, read_only=True, embedder=False) as store:
        yield store


def _list_through(server: Announcement, **filters: Any) -> list[Lesson]:
    """The same list from the running gateway (``GET /lessons``, page by page)."""
    from agentlake.cli.beside_server import call
    from agentlake.learn import Lesson

    params = {name: value for name, value in filters.items() if value not in (None, [])}
    lessons: list[Lesson] = []
    while True:
        page = call(server, "GET", "/lessons", params=params | {"limit": _PAGE, "offset": len(lessons)})
        lessons += [Lesson.model_validate(lesson) for lesson in page["lessons"]]
        if not page["lessons"] or len(lessons) >= page["total"]:
            return lessons


def _row(lesson: Lesson) -> list[Any]:
    action = lesson.action + (f" [machine: {lesson.describe_action()}]" if lesson.machine else "")
    scope = lesson.scope if lesson.scope == "global" else f"project:{lesson.project_id}"
    return [
        lesson.id,
        lesson.status,
        f"{lesson.confidence:.2f}",
        scope,
        lesson.domain,
        lesson.match.describe(),
        lesson.trigger,
        action,
        lesson.helpful,
        lesson.harmful,
        lesson.source,
    ]


def _render_events(events: list[LessonEvent], fmt: Format, title: str) -> None:
    rows = [
        [
            e.lesson_id,
            e.version,
            e.kind,
            e.at.isoformat(timespec="seconds"),
            e.actor,
            f"{e.lesson.confidence:.2f}",
            e.lesson.status,
            e.reason,
        ]
        for e in events
    ]
    cols = ["lesson", "version", "event", "at", "actor", "confidence", "status", "reason"]
    render_rows(cols, rows, fmt, title=title)


@lessons_app.command("list")
def list_command(
    status: list[str] = typer.Option(
        [], "--status", help="pending, active, conflict-hold or retired; repeatable."
    ),
    domain: str | None = typer.Option(
        None, "--domain", help="Only this domain, e.g. staffing, data, tools, playbook."
    ),
    scope: str | None = typer.Option(None, "--scope", help="project or global."),
    project: str | None = typer.Option(None, "--project", help="Only lessons of this project id."),
    client: str | None = typer.Option(None, "--client", help="Only lessons matching this client id."),
    role: str | None = typer.Option(None, "--role", help="Only lessons matching this role."),
    dataset: str | None = typer.Option(None, "--dataset", help="Only data lessons about this dataset."),
    run: str | None = _RUN,
    staffer: str | None = _STAFFER,
    store_file: Path | None = _STORE,
    fmt: Format = format_option(),
) -> None:
    """List current lessons, most confident first (none yet: an empty list)."""
    from agentlake.cli.beside_server import running_gateway

    where = _elsewhere(run, staffer, store_file)
    server = running_gateway() if where is None else None
    if server is not None:
        lessons = _list_through(
            server, status=status, domain=domain, scope=scope, client_id=client, role=role, dataset=dataset
        )
        lessons = [lesson for lesson in lessons if project is None or lesson.project_id == project]
    else:
        with _reading(where, missing_ok=True) as store:
            lessons = (
                []
                if store is None
                else store.list(
                    status=status or None,  # type: ignore[arg-type]  # the CLI's words are the statuses
                    domain=domain,
                    scope=scope,  # type: ignore[arg-type]
                    project_id=project,
                    client_id=client,
                    role=role,
                    dataset=dataset,
                )
            )
    render_rows(_COLUMNS, [_row(lesson) for lesson in lessons], fmt, title=f"{len(lessons)} lesson(s)")


@lessons_app.command("show")
def show_command(
    lesson_id: str = typer.Argument(..., help="Lesson id, e.g. L-3f2a9c01bd."),
    run: str | None = _RUN,
    staffer: str | None = _STAFFER,
    store_file: Path | None = _STORE,
) -> None:
    """Print one lesson as JSON: match, machine action, evidence (`agentlake ops show OP_ID`
    shows each op it names), counts, timestamps."""
    with _reading(_elsewhere(run, staffer, store_file)) as store:
        assert store is not None
        print_json(store.get(lesson_id).model_dump(mode="json"))


@lessons_app.command("history")
def history_command(
    lesson_id: str = typer.Argument(..., help="Lesson id."),
    run: str | None = _RUN,
    staffer: str | None = _STAFFER,
    store_file: Path | None = _STORE,
    fmt: Format = format_option(),
) -> None:
    """Every change of a lesson, oldest first (version, event, who, why)."""
    with _reading(_elsewhere(run, staffer, store_file)) as store:
        assert store is not None
        events = store.history(lesson_id)
    _render_events(events, fmt, f"history of {lesson_id}")


@lessons_app.command("rollback")
def rollback_command(
    lesson_id: str = typer.Argument(..., help="Lesson id."),
    version: int = typer.Argument(
        ..., min=1, help="The version whose content to restore (see `lessons history`)."
    ),
    reason: str = typer.Option("", "--reason", help="Why; kept in the history."),
    fmt: Format = format_option("Output: table (one line), json (the lesson as it now stands) or csv."),
) -> None:
    """Restore the content of an earlier version, as a new version (history is kept)."""
    with _open(embedder=False) as store:
        lesson = store.rollback(lesson_id, version, reason=reason)
    render_record(
        lesson.model_dump(mode="json"),
        fmt,
        lambda: console.print(
            f"{lesson.id} is now version {lesson.version} ({lesson.status}, confidence "
            f"{lesson.confidence:.2f}), restored from version {version}"
        ),
    )


@lessons_app.command("retire")
def retire_command(
    lesson_id: str = typer.Argument(..., help="Lesson id, e.g. L-3f2a9c01bd."),
    reason: str = typer.Option(..., "--reason", help="Why; kept in the history (rollback undoes it)."),
    fmt: Format = format_option("Output: table (one line), json (the retired lesson) or csv."),
) -> None:
    """Retire a lesson by hand: agents are no longer given it; it stays in the history and
    `lessons rollback` restores it (beside a running server: its POST /lessons/{id}/retire,
    with an admin key in AGENTLAKE_API_KEY when keys are set)."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.errors import UserError
    from agentlake.learn import Lesson

    if not reason.strip():
        raise UserError("--reason is empty: say why the lesson is retired (it is kept in the history)")
    server = running_gateway()
    if server is not None:
        path = f"/lessons/{lesson_id}/retire"
        lesson = Lesson.model_validate(call(server, "POST", path, json={"reason": reason}))
    else:
        with _open(embedder=False) as store:
            lesson = store.retire(lesson_id, reason, actor="human")
    render_record(
        lesson.model_dump(mode="json"),
        fmt,
        lambda: console.print(
            f"{lesson.id} is retired (version {lesson.version}); `agentlake lessons rollback "
            f"{lesson.id} {lesson.version - 1}` restores it",
            highlight=False,
        ),
    )


@lessons_app.command("export")
def export_command(
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    status: list[str] = typer.Option([], "--status", help="Only lessons with this status; repeatable."),
    run: str | None = _RUN,
    staffer: str | None = _STAFFER,
    store_file: Path | None = _STORE,
) -> None:
    """Export current lessons as JSON (for `lessons import` elsewhere; a run's with --run)."""
    with _reading(_elsewhere(run, staffer, store_file)) as store:
        assert store is not None
        text = store.export_json(status=status or None)  # type: ignore[arg-type]
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)


@lessons_app.command("import")
def import_command(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="A file from `lessons export`."),
    fmt: Format = format_option("Output: table (one line), json (the ids added, replaced, kept) or csv."),
) -> None:
    """Import lessons; by id, a project lesson beats a global one, else the higher confidence wins."""
    with _open(embedder=False) as store:
        report = store.import_json(path.read_bytes())
    render_record(
        {"added": report.added, "replaced": report.replaced, "kept": report.kept},
        fmt,
        lambda: console.print(
            f"added {len(report.added)}, replaced {len(report.replaced)}, kept {len(report.kept)} existing"
        ),
    )


@lessons_app.command("prune")
def prune_command(
    fmt: Format = format_option(),
) -> None:
    """Decay unused lessons (-0.02 per week) and retire pending ones older than 30 days."""
    with _open(embedder=False) as store:
        events = store.maintain()
    _render_events(events, fmt, f"{len(events)} change(s)")


@lessons_app.command("promote")
def promote_command(
    fmt: Format = format_option(),
    similarity: bool = typer.Option(
        True, "--similarity/--no-similarity", help="Group lessons in words by embedding similarity."
    ),
) -> None:
    """Promote lessons active in >= 2 projects with mean confidence >= 0.8 to global."""
    with _open(embedder=None if similarity else False) as store:
        events = store.promote()
    _render_events(events, fmt, f"{len(events)} change(s)")


@lessons_app.command("learn")
def learn_command(
    since: str | None = typer.Option(
        None, "--since", help="Only ops newer than this: 30m, 2h, 7d or an ISO time."
    ),
    limit: int = typer.Option(2000, "--limit", min=1, help="At most this many of the newest ops."),
    extractor: str | None = typer.Option(
        None, "--extractor", help="heuristic or llm (default AGENTLAKE_LEARN_EXTRACTOR)."
    ),
    project: str | None = typer.Option(
        None, "--project", help="Project id the new lessons belong to (default: default)."
    ),
    similarity: bool = typer.Option(
        True, "--similarity/--no-similarity", help="Dedup by embedding similarity (loads the embedder)."
    ),
    fmt: Format = format_option(
        "Output: table (one line), json (the whole cycle report; beside a server, its learner's "
        "status) or csv (one row)."
    ),
    as_json: bool = JSON_ALIAS,
) -> None:
    """Learn from recent observer ops now: extract, curate, measure effects, decay, promote
    (beside a running `agentlake serve`: its learner runs one cycle over the ops it has not
    read yet)."""
    from agentlake.cli.beside_server import LONG_TIMEOUT_S, call, running_gateway

    fmt = chosen_format(fmt, as_json)
    server = running_gateway()
    if server is not None:
        status = call(server, "POST", "/learn/run", timeout_s=LONG_TIMEOUT_S)
        cycle = status["history"][-1] if status["history"] else None
        render_record(
            status,
            fmt,
            lambda: console.print(
                _status_line(cycle) if cycle else "the server's learner ran no cycle", highlight=False
            ),
        )
        return
    from agentlake.learn import learn_cycle, read_recent_ops
    from agentlake.learn.loop import parse_since

    ops = read_recent_ops(since=parse_since(since), limit=limit)
    with _open(embedder=None if similarity else False) as store, _lake() as lake:
        report = learn_cycle(store, ops, extractor=extractor, project_id=project, lake=lake)

    def text() -> None:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(report.counts().items())) or "no deltas"
        console.print(
            f"{report.ops_read} op(s) read, {report.ops_new} new; {report.extractor}: {counts}; "
            f"{len(report.effects)} lesson(s) measured; {len(report.maintenance)} decay/expiry change(s); "
            f"{len(report.promotions)} promotion change(s)"
        )
        for note, value in report.notes.items():
            console.print(f"  {note}: {value}", highlight=False)

    render_record(report.model_dump(mode="json"), fmt, text)


@lessons_app.command("status")
def status_command(
    fmt: Format = format_option(
        "Output: table (one line per recent cycle), json (the learner's status) or csv (one row)."
    ),
    as_json: bool = JSON_ALIAS,
) -> None:
    """What the running server's scheduled learner did: one line per recent cycle."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.errors import UserError

    fmt = chosen_format(fmt, as_json)  # bad input fails before any work
    server = running_gateway()
    if server is None:
        raise UserError(
            "no server runs for this data directory: its learner runs inside `agentlake serve`; "
            "`agentlake lessons learn` runs one cycle now"
        )
    status = call(server, "GET", "/learn/status")

    def text() -> None:
        state = "running" if status["running"] else "off (learn_schedule)"
        console.print(
            f"learner {state}: {status['cycles']} cycle(s), {status['errors']} failed, "
            f"{status['ops_read']} op(s) read, up to seq {status['cursor']}",
            highlight=False,
        )
        for cycle in status["history"]:
            console.print(f"  {cycle['at'][:19]} {_status_line(cycle)}", highlight=False)

    render_record(status, fmt, text)


def _status_line(cycle: dict[str, Any]) -> str:
    from agentlake.learn.loop import CycleStatus

    return CycleStatus.model_validate(cycle).line()


@contextmanager
def _lake() -> Iterator[Any]:
    """The lake read-only, for lessons checked by running them; ``None`` when there is none."""
    from agentlake.errors import AgentlakeError
    from agentlake.lake import Lake

    try:
        lake = Lake.open(read_only=True)
    except AgentlakeError:
        yield None
        return
    try:
        yield lake
    finally:
        lake.close()


def register(app: typer.Typer) -> None:
    app.add_typer(lessons_app, name="lessons")
