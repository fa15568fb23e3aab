"""``agentlake lessons``: list, inspect, roll back, move and curate lessons; learn from recent ops.

Each command opens the lesson store (``settings.learn_file``), calls one ``agentlake.learn``
function and renders the result. The store is one DuckDB file with one writer: while
``agentlake serve`` runs for the data directory, ``list`` asks it (``GET /playbooks``) and the
other commands say that the server holds the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from agentlake.cli.output import Format, console, print_json, render_rows

if TYPE_CHECKING:
    from agentlake.learn import Lesson, LessonEvent, LessonStore
    from agentlake.serving import Announcement

lessons_app = typer.Typer(
    help="Lessons learned from observed ops: list, show, history, rollback, export, import, prune, promote, learn.",
    no_args_is_help=True,
)

_PAGE = 1000  # GET /playbooks's largest page

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


def _list_through(server: Announcement, **filters: Any) -> list[Lesson]:
    """The same list from the running gateway (``GET /playbooks``, page by page)."""
    from agentlake.cli.beside_server import call
    from agentlake.learn import Lesson

    params = {name: value for name, value in filters.items() if value not in (None, [])}
    lessons: list[Lesson] = []
    while True:
        page = call(server, "GET", "/playbooks", params=params | {"limit": _PAGE, "offset": len(lessons)})
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
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """List current lessons, most confident first."""
    from agentlake.cli.beside_server import running_gateway

    server = running_gateway()
    if server is not None:
        lessons = _list_through(
            server, status=status, domain=domain, scope=scope, client_id=client, role=role, dataset=dataset
        )
        lessons = [lesson for lesson in lessons if project is None or lesson.project_id == project]
    else:
        with _open(embedder=False) as store:
            lessons = store.list(
                status=status or None,
                domain=domain,
                scope=scope,
                project_id=project,
                client_id=client,
                role=role,
                dataset=dataset,
            )  # type: ignore[arg-type]
    render_rows(_COLUMNS, [_row(lesson) for lesson in lessons], fmt, title=f"{len(lessons)} lesson(s)")


@lessons_app.command("show")
def show_command(lesson_id: str = typer.Argument(..., help="Lesson id, e.g. L-3f2a9c01bd.")) -> None:
    """Print one lesson as JSON: match, machine action, evidence, counts, timestamps."""
    with _open(embedder=False) as store:
        print_json(store.get(lesson_id).model_dump(mode="json"))


@lessons_app.command("history")
def history_command(
    lesson_id: str = typer.Argument(..., help="Lesson id."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Every change of a lesson, oldest first (version, event, who, why)."""
    with _open(embedder=False) as store:
        events = store.history(lesson_id)
    _render_events(events, fmt, f"history of {lesson_id}")


@lessons_app.command("rollback")
def rollback_command(
    lesson_id: str = typer.Argument(..., help="Lesson id."),
    version: int = typer.Argument(
        ..., min=1, help="The version whose content to restore (see `lessons history`)."
    ),
    reason: str = typer.Option("", "--reason", help="Why; kept in the history."),
) -> None:
    """Restore the content of an earlier version, as a new version (history is kept)."""
    with _open(embedder=False) as store:
        lesson = store.rollback(lesson_id, version, reason=reason)
    console.print(
        f"{lesson.id} is now version {lesson.version} ({lesson.status}, confidence {lesson.confidence:.2f}), "
        f"restored from version {version}"
    )


@lessons_app.command("export")
def export_command(
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    status: list[str] = typer.Option([], "--status", help="Only lessons with this status; repeatable."),
) -> None:
    """Export current lessons as JSON (for `lessons import` elsewhere)."""
    with _open(embedder=False) as store:
        text = store.export_json(status=status or None)  # type: ignore[arg-type]
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)


@lessons_app.command("import")
def import_command(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="A file from `lessons export`."),
) -> None:
    """Import lessons; by id, a project lesson beats a global one, else the higher confidence wins."""
    with _open(embedder=False) as store:
        report = store.import_json(path.read_bytes())
    console.print(
        f"added {len(report.added)}, replaced {len(report.replaced)}, kept {len(report.kept)} existing"
    )


@lessons_app.command("prune")
def prune_command(
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
) -> None:
    """Decay unused lessons (-0.02 per week) and retire pending ones older than 30 days."""
    with _open(embedder=False) as store:
        events = store.maintain()
    _render_events(events, fmt, f"{len(events)} change(s)")


@lessons_app.command("promote")
def promote_command(
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table, json or csv."),
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
    as_json: bool = typer.Option(False, "--json", help="Print the whole cycle report as JSON."),
) -> None:
    """Learn from recent observer ops now: extract, curate, measure effects, decay, promote
    (beside a running `agentlake serve`: its learner runs one cycle over the ops it has not
    read yet)."""
    from agentlake.cli.beside_server import LONG_TIMEOUT_S, call, running_gateway

    server = running_gateway()
    if server is not None:
        status = call(server, "POST", "/learn/run", timeout_s=LONG_TIMEOUT_S)
        if as_json:
            print_json(status)
            return
        cycle = status["history"][-1] if status["history"] else None
        console.print(_status_line(cycle) if cycle else "the server's learner ran no cycle", highlight=False)
        return
    from agentlake.learn import learn_cycle, read_recent_ops
    from agentlake.learn.loop import parse_since

    ops = read_recent_ops(since=parse_since(since), limit=limit)
    with _open(embedder=None if similarity else False) as store, _lake() as lake:
        report = learn_cycle(store, ops, extractor=extractor, project_id=project, lake=lake)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(report.counts().items())) or "no deltas"
    console.print(
        f"{report.ops_read} op(s) read, {report.ops_new} new; {report.extractor}: {counts}; "
        f"{len(report.effects)} lesson(s) measured; {len(report.maintenance)} decay/expiry change(s); "
        f"{len(report.promotions)} promotion change(s)"
    )
    for note, value in report.notes.items():
        console.print(f"  {note}: {value}", highlight=False)


@lessons_app.command("status")
def status_command(
    as_json: bool = typer.Option(False, "--json", help="Print the learner's status as JSON."),
) -> None:
    """What the running server's scheduled learner did: one line per recent cycle."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.errors import UserError

    server = running_gateway()
    if server is None:
        raise UserError(
            "no server runs for this data directory: its learner runs inside `agentlake serve`; "
            "`agentlake lessons learn` runs one cycle now"
        )
    status = call(server, "GET", "/learn/status")
    if as_json:
        print_json(status)
        return
    state = "running" if status["running"] else "off (learn_schedule)"
    console.print(
        f"learner {state}: {status['cycles']} cycle(s), {status['errors']} failed, "
        f"{status['ops_read']} op(s) read, up to seq {status['cursor']}",
        highlight=False,
    )
    for cycle in status["history"]:
        console.print(f"  {cycle['at'][:19]} {_status_line(cycle)}", highlight=False)


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
