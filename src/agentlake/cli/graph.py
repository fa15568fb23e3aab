"""``agentlake graph list | show | nodes | validate | chat``: the graph runtime from the terminal.

Thin doors onto ``agentlake.graph``: list and show graph definitions, list the registered node
types, validate YAML files, and run one message through a graph (the same runtime the
dashboard's ``/ws`` uses) printing the reply, the controls and, with ``--trace``, every node event.
While ``agentlake serve`` runs for the data directory, ``chat`` runs the turn on its ``/ws``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from agentlake.cli.output import Format, console, format_option, print_json, render_record, render_rows

graph_app = typer.Typer(
    help="Conversational graphs: list, show and validate definitions; run a message through one.",
    no_args_is_help=True,
)
if TYPE_CHECKING:
    from agentlake.serving import Announcement

_FORMAT = typer.Option(Format.table, "--format", "-f", help="Output format: table, json or csv.")
_GRAPH = typer.Argument(..., help="A built-in graph name (see `agentlake graph list`) or a YAML file.")


def _load(name_or_path: str) -> Any:
    from agentlake.graph import load_graph

    return load_graph(name_or_path)


@graph_app.command("list")
def list_graphs(fmt: Format = _FORMAT) -> None:
    """The built-in graphs: nodes, edges, edge types, what each is for."""
    from agentlake.graph import builtin_graphs

    rows = [
        [g.name, len(g.nodes), len(g.edges), ", ".join(g.summary()["edge_types"]), g.description]
        for g in builtin_graphs().values()
    ]
    render_rows(["name", "nodes", "edges", "edge types", "description"], rows, fmt)


@graph_app.command("show")
def show(graph: str = _GRAPH, fmt: Format = _FORMAT) -> None:
    """One graph's nodes (type, role, model use) and typed edges."""
    view = _load(graph).view()
    if fmt is Format.json:
        print_json(view)
        return
    render_rows(
        ["id", "type", "role", "model"],
        [[n["id"], n["type"], n["role"], "yes" if n["uses_llm"] else ""] for n in view["nodes"]],
        fmt,
        title=f"{view['name']}: nodes",
    )
    render_rows(
        ["from", "to", "type"],
        [[e["source"], e["target"], e["type"]] for e in view["edges"]],
        fmt,
        title=f"{view['name']}: edges",
    )


@graph_app.command("nodes")
def nodes(fmt: Format = _FORMAT) -> None:
    """Registered node types and their declared capabilities."""
    from agentlake.graph import registered_nodes

    rows = [
        [
            i.name,
            i.role,
            i.version,
            ", ".join(i.accepts),
            ", ".join(i.emits) or "-",
            "yes" if i.uses_llm else "",
            i.description,
        ]
        for i in registered_nodes()
    ]
    render_rows(["type", "role", "version", "accepts", "emits", "model", "description"], rows, fmt)


@graph_app.command("validate")
def validate(
    files: list[Path] = typer.Argument(..., help="Graph YAML files to check."),
    fmt: Format = format_option("Output: table (one line a file), json or csv (file, graph, nodes, edges)."),
) -> None:
    """Check graph files: node types, edges, edge types, required roles. Exits 2 on the first problem."""
    from agentlake.graph import load_graph_file

    checked = []
    for path in files:
        graph = load_graph_file(path)
        checked.append([str(path), graph.name, len(graph.nodes), len(graph.edges)])
    if fmt is not Format.table:
        render_rows(["file", "graph", "nodes", "edges"], checked, fmt)
        return
    for shown, name, nodes, edges in checked:
        console.print(f"ok: {shown} (graph {name}: {nodes} nodes, {edges} edges)")


@graph_app.command("chat")
def chat(
    message: str = typer.Argument(..., help='What to say, e.g. "how many welders are in OH?".'),
    graph: str = typer.Option("default", "--graph", "-g", help="A built-in graph name or a YAML file."),
    trace: bool = typer.Option(False, "--trace", help="Also print every node's trace events."),
    model: str = typer.Option(
        None, "--model", help="Model of the thinker and director (default: the graph_model setting)."
    ),
    fmt: Format = format_option(
        "Output: table (what the browser would show), json (reply, path, every event sent and, with "
        "--trace, the node events) or csv (one row)."
    ),
) -> None:
    """Run one message through a graph, as the dashboard would, and print what the browser would get."""
    from agentlake.cli.beside_server import running_gateway
    from agentlake.cli.output import err_console
    from agentlake.errors import RunError
    from agentlake.graph import GraphDef, GraphRuntime, load_graph_file
    from agentlake.graph.modelcalls import graph_model_choice
    from agentlake.settings import load_settings

    server = running_gateway()
    if server is not None:
        # The server holds the lake: the turn runs there, as the dashboard's would.
        sent, events = _chat_through(server, message, graph=graph, model=model)
    else:
        chosen: str | GraphDef = load_graph_file(graph) if graph.endswith((".yaml", ".yml")) else graph
        settings = load_settings(graph_model=model)
        _, note = graph_model_choice(settings)
        if note:
            err_console.print(f"note: {note}", highlight=False)  # stderr: never inside the data
        runtime = GraphRuntime(settings, graph=chosen)
        sent = []
        try:
            events = runtime.handle(runtime.session(), {"type": "message", "text": message}, sent.append)
        finally:
            runtime.close()
    done = next((event for event in sent if event["type"] == "done"), {})
    record = {
        "reply": done.get("text"),
        "path": done.get("path"),
        "events": sent,
        "trace": events if trace else [],
    }
    render_record(record, fmt, lambda: _print(sent, events if trace else []))
    errors = [event["message"] for event in sent if event["type"] == "error"]
    if errors:
        raise RunError(errors[0])


def _chat_through(
    server: Announcement, message: str, *, graph: str, model: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One turn on the running gateway's dashboard socket (``/ws``): what it sent, and the trace
    records of the turn. Its graph and model are the server's: asking for others is refused."""
    import json

    from websockets.exceptions import InvalidStatus, WebSocketException
    from websockets.sync.client import connect

    from agentlake.cli.beside_server import LONG_TIMEOUT_S, SHORT_TIMEOUT_S, key_headers
    from agentlake.errors import RunError, UserError

    url = server.url.replace("http", "ws", 1) + "/ws"
    sent: list[dict[str, Any]] = []
    trace: list[dict[str, Any]] = []
    try:
        with connect(url, additional_headers=key_headers(), open_timeout=SHORT_TIMEOUT_S) as socket:
            hello = json.loads(socket.recv(timeout=SHORT_TIMEOUT_S))
            running = (hello["graph"]["name"], hello["model"])
            if (graph, model or running[1]) != running:
                raise UserError(
                    f"{server.describe()} runs graph {running[0]!r} with model {running[1]!r}; "
                    "stop it to chat with another graph or model here"
                )
            socket.send(json.dumps({"type": "message", "text": message}))
            while not sent or sent[-1]["type"] != "done":
                event = json.loads(socket.recv(timeout=LONG_TIMEOUT_S))
                (trace if event["type"] == "trace" else sent).append(event)
    except InvalidStatus as exc:
        status = exc.response.status_code
        hint = " (set AGENTLAKE_API_KEY to one of its keys)" if status in (401, 403) else ""
        raise UserError(f"{server.describe()} refused the chat socket: HTTP {status}{hint}") from None
    except (OSError, TimeoutError, WebSocketException) as exc:
        raise RunError(
            f"{server.describe()} did not complete the chat turn ({type(exc).__name__}: {exc})"
        ) from None
    return sent, trace


def _print(sent: list[dict[str, Any]], trace: list[dict[str, Any]]) -> None:
    for record in trace:
        console.print(f"[dim]{record['node']:>10} {record['event']}[/] {record['data']}", highlight=False)
    for event in sent:
        if event["type"] == "done" and event.get("text"):
            console.print(event["text"], highlight=False, soft_wrap=True)
            console.print(f"[dim]path: {event.get('path')}[/]")
        elif event["type"] == "controls":
            for control in event["controls"]:
                if control["kind"] == "table":
                    console.print(
                        f"[dim]{control.get('title') or 'table'}[/]", highlight=False, soft_wrap=True
                    )
                    render_rows(control["columns"], control["rows"])
                elif control["kind"] == "button":
                    console.print(f"\\[button] {control['label']} -> {control['action']}", highlight=False)
                else:
                    console.print(f"\\[label] {control['text']}", highlight=False)
        elif event["type"] == "hud" and event.get("flag"):
            console.print(f"[yellow]{event['flag']}[/]: {event['message']}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(graph_app, name="graph")
