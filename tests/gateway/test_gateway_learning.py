"""`agentlake serve` learns lessons from the ops it records, on the settings' interval."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from agentlake.gateway import create_app
from agentlake.observe import ObservedOp, Provenance
from agentlake.settings import load_settings


def _rejected_fill() -> ObservedOp:
    return ObservedOp(
        endpoint="fill.judged",
        source="scenario",
        success=False,
        provenance=Provenance(
            run_id="r1", event_kind="baseline_fill", role="Welder", city="Cleveland", state="OH", count=2
        ),
        attributes={
            "client_id": "riverfront-steel",
            "task_kind": "baseline_fill",
            "requested": 2,
            "filled": 1,
            "accepted": [1],
            "rejections": [
                {
                    "worker_id": 7,
                    "reason": "reliability 0.55 below 0.70",
                    "rule": "min_reliability",
                    "value": 0.7,
                }
            ],
        },
    )


def test_serve_learns_on_schedule() -> None:
    settings = load_settings(learn_interval_s=0.2)
    app = create_app(settings, mount_mcp=False)
    with TestClient(app) as client:
        scheduler = app.state.learning
        assert scheduler.running
        app.state.learning.ops_source.record(_rejected_fill())
        deadline = time.monotonic() + 20
        while not scheduler.store.list():
            assert time.monotonic() < deadline, f"no lesson learned; last error: {scheduler.last_error}"
            time.sleep(0.1)
        lessons = client.get("/playbooks").json()
        assert "riverfront-steel" in str(lessons)
    assert not scheduler.running


def test_schedule_can_be_turned_off() -> None:
    app = create_app(load_settings(learn_schedule=False), mount_mcp=False)
    with TestClient(app):
        assert not hasattr(app.state, "learning")
