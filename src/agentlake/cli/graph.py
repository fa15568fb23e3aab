"""``agentlake graph list | show | nodes | validate | chat``: the graph runtime from the terminal.

Thin doors onto ``agentlake.graph``: list and show graph definitions, list the registered node
types, validate YAML files, and run one message through a graph (the same runtime the
dashboard's ``/ws`` uses) printing the reply, the controls and, with ``--trace``, every node event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from agentlake.cli.output import Format, console, print_json, render_rows

graph_app = typer.Typer(
    help="Conversational graphs: list, show and validate definitions; run a message through one.",
    no_args_is_help=True,
)
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
def validate(files: list[Path] = typer.Argument(..., help="Graph YAML files to check.")) -> None:
    """Check graph files: node types, edges, edge types, required roles. Exits 2 on the first problem."""
    from agentlake.graph import load_graph_file

    for path in files:
        graph = load_graph_file(path)
        console.print(f"ok: {path} (graph {graph.name}: {len(graph.nodes)} nodes, {len(graph.edges)} edges)")


@graph_app.command("chat")
def chat(
    message: str = typer.Argument(..., help='What to say, e.g. "how many welders are in OH?".'),
    graph: str = typer.Option("default", "--graph", "-g", help="A built-in graph name or a YAML file."),
    trace: bool = typer.Option(False, "--trace", help="Also print every node's trace events."),
    model: str = typer.Option(
        None, "--model", help="Model of the thinker and director (default: the graph_model setting)."
    ),
) -> None:
    """Run one message through a graph, as the dashboard would, and print what the browser would get."""
    from agentlake.errors import RunError
    from agentlake.graph import GraphDef, GraphRuntime, load_graph_file
    from agentlake.settings import load_settings

    chosen: str | GraphDef = load_graph_file(graph) if graph.endswith((".yaml", ".yml")) else graph
    runtime = GraphRuntime(load_settings(graph_model=model), graph=chosen)
    sent: list[dict[str, Any]] = []
    try:
        events = runtime.handle(runtime.session(), {"type": "message", "text": message}, sent.append)
    finally:
        runtime.close()
    _print(sent, events if trace else [])
    errors = [event["message"] for event in sent if event["type"] == "error"]
    if errors:
        raise RunError(errors[0])


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
