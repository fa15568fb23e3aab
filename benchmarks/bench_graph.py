"""Cost of the graph runtime per turn, against doing the same model and tool calls by hand.

A real lake (2,000 generated workers) and a real observer store in a temporary data dir; the
model is the built-in demo (``function:graph-demo``, in-process, deterministic), so what is
measured is agentlake's own work, not a model's. The output node's typing delay is set to 0.

* ``baseline``: the calls a data turn makes, made directly: director plan, thinker step, the
  ``sql`` tool through the agents' registry, thinker answer; model calls recorded as ops too.
* ``graph data turn``: ``GraphRuntime.handle`` of the same question (the same calls, plus
  routing, trace events to the JSONL file, the sensor, the ui's table, memory and the
  ``graph.turn`` op).
* ``reflex turn`` (no model) and ``go: transition`` (no model), the local paths.
* over a real uvicorn server and WebSocket: a bad frame answered with ``error`` (the transport
  alone), a reflex turn and a data turn, from send to ``done``.

Variants alternate in each round so drift on a shared machine hits all alike.

Run: .venv/bin/python benchmarks/bench_graph.py [--turns N] [--ws-turns N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

QUESTION = "how many forklift operators are in CA?"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, values: list[float], baseline: float | None = None) -> str:
    median = statistics.median(values)
    ratio = f"{median / baseline:5.2f}x" if baseline else "     "
    return f"{name:34} median {median:8.2f} ms  p90 {pct(values, 0.9):8.2f} ms  {ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="measured rounds in-process")
    parser.add_argument("--ws-turns", type=int, default=150, help="measured rounds over the WebSocket")
    parser.add_argument("--workers", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentlake.graph import GraphRuntime, Resources, parse_graph
    from agentlake.graph.definition import GRAPHS_DIR
    from agentlake.graph.modelcalls import graph_model
    from agentlake.graph.nodes.director_v1 import DirectorPlan
    from agentlake.graph.nodes.thinker_v1 import ThinkerStep
    from agentlake.lake import Lake
    from agentlake.llm import Message, generate_structured
    from agentlake.observe import install_llm_recording, open_observer, set_observer
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    workdir = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    settings = load_settings(data_dir=workdir, graph_model="function:graph-demo")
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(args.workers, seed=7, clients=40))
    observer = open_observer(settings)
    set_observer(observer)
    resources = Resources(settings, observer=observer)

    import yaml

    data = yaml.safe_load((GRAPHS_DIR / "default.yaml").read_text())
    for node in data["nodes"]:
        if node["type"] == "output_v1":
            node["config"] = {"chunk_chars": 24, "delay_ms": 0}
    runtime = GraphRuntime(settings, resources=resources, graph=parse_graph(data, where="bench"))
    model = graph_model(settings)

    def baseline() -> None:
        stop = install_llm_recording(observer)
        try:
            plan = generate_structured(
                model,
                [Message(role="system", content="ROLE: director"), Message(role="user", content=QUESTION)],
                DirectorPlan,
            )
            thinker = [
                Message(role="system", content="ROLE: thinker\n" + json.dumps(plan.model_dump())),
                Message(role="user", content=QUESTION),
            ]
            step = generate_structured(model, thinker, ThinkerStep)
            from agentlake.agents.policy import RunContext

            ctx = RunContext(
                lake=resources.lake,
                observer=observer,
                settings=settings,
                tools=resources.tools,
                agent_id="bench",
            )
            call = step.tool_calls[0]
            result = resources.tools.call(call.tool, call.args, ctx=ctx)
            body = json.dumps(
                {"tool": call.tool, "ok": result.ok, "rows": result.rows, "result": result.text}
            )
            generate_structured(
                model,
                [
                    *thinker,
                    Message(role="assistant", content=step.model_dump_json()),
                    Message(role="tool", content=body),
                ],
                ThinkerStep,
            )
        finally:
            stop()

    sessions = [runtime.session() for _ in range(4)]

    def data_turn(i: int) -> None:
        sent: list[dict] = []
        runtime.handle(sessions[i % 4], {"type": "message", "text": QUESTION}, sent.append)
        assert sent[-1]["type"] == "controls", sent[-1]

    def reflex_turn(i: int) -> None:
        runtime.handle(sessions[i % 4], {"type": "message", "text": "thanks"}, lambda e: None)

    machine_session = runtime.session()
    runtime.handle(machine_session, {"type": "message", "text": "set up an order workflow"}, lambda e: None)
    states = ["packed", "shipped", "delivered"]

    def transition(i: int) -> None:
        target = states[i % 3]
        if target == "packed":
            machine_session.machines["order"].current = "new"
        sent: list[dict] = []
        runtime.handle(machine_session, {"type": "action", "action": f"go:order:{target}"}, sent.append)
        assert sent[0]["type"] == "transition", sent

    variants = {
        "baseline (same calls by hand)": lambda i: baseline(),
        "graph data turn": data_turn,
        "reflex turn (no model)": reflex_turn,
        "go: transition (no model)": transition,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(20):  # warm-up: imports, caches, the store's first commits
        for fn in variants.values():
            fn(i)
    for i in range(args.turns):
        for name, fn in variants.items():
            started = time.perf_counter()
            fn(i)
            times[name].append((time.perf_counter() - started) * 1000)

    per_turn = {
        "data turn": len(runtime.handle(sessions[0], {"type": "message", "text": QUESTION}, lambda e: None)),
        "reflex turn": len(
            runtime.handle(sessions[0], {"type": "message", "text": "thanks"}, lambda e: None)
        ),
    }
    started = time.perf_counter()
    for n in range(20000):
        runtime.trace.emit(
            session="bench", turn=n, node="thinker", event="step", data={"round": 0, "say": "x" * 80}
        )
    trace_rate = 20000 / (time.perf_counter() - started)

    ws_times = websocket_rounds(settings, observer, runtime.active, args.ws_turns)

    runtime.close()
    set_observer(None)
    observer.close()

    print(
        f"graph runtime benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"{args.workers} workers, {args.turns} rounds in-process, {args.ws_turns} over the WebSocket"
    )
    base = statistics.median(times["baseline (same calls by hand)"])
    for name, values in times.items():
        print(row(name, values, base))
    print(
        f"trace events per turn: {per_turn}; TraceLog.emit {trace_rate:,.0f} events/s "
        "(append + size check, one open per event)"
    )
    transport = statistics.median(ws_times["ws: bad frame -> error (transport)"])
    for name, values in ws_times.items():
        print(row(name, values, transport))


def websocket_rounds(settings: Any, observer: Any, graph: Any, rounds: int) -> dict[str, list[float]]:
    """Send -> done (or error) over a real uvicorn server's /ws."""
    import socket

    import uvicorn
    from websockets.sync.client import connect

    from agentlake.gateway import Services, create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    services = Services(settings, observer=observer)
    app = create_app(settings, services=services, mount_mcp=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    app.state.graph_runtime.add(graph)  # the same graph: no typing delay
    app.state.graph_runtime.switch(graph.name)
    times: dict[str, list[float]] = {
        "ws: bad frame -> error (transport)": [],
        "ws: reflex turn": [],
        "ws: data turn": [],
    }
    with connect(f"ws://127.0.0.1:{port}/ws") as ws:
        json.loads(ws.recv())  # hello

        def until(kind: str) -> None:
            while json.loads(ws.recv())["type"] != kind:
                pass

        def once(name: str, frame: str, kind: str) -> None:
            started = time.perf_counter()
            ws.send(frame)
            until(kind)
            times[name].append((time.perf_counter() - started) * 1000)

        for i in range(rounds + 10):
            once("ws: bad frame -> error (transport)", "not json", "error")
            once("ws: reflex turn", json.dumps({"type": "message", "text": "thanks"}), "done")
            once("ws: data turn", json.dumps({"type": "message", "text": QUESTION}), "controls")
            if i < 10:  # warm-up
                for values in times.values():
                    values.pop()
    server.should_exit = True
    thread.join(timeout=10)
    return times


if __name__ == "__main__":
    main()
