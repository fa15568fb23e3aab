"""The graph's thinker reads an external source (`crm_url`: a real PostgreSQL) through its
``sql`` tool, as it reads the lake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_support import FakeContext, step

from agentlake.graph import Packet, node_class
from agentlake.graph.modelcalls import NodeModels
from agentlake.graph.runtime import Resources
from agentlake.lake import Lake
from agentlake.llm import ScriptedProvider
from agentlake.settings import load_settings


@pytest.fixture
def resources(tmp_path: Path, crm_url: str) -> Iterator[Resources]:
    from agentlake.observe import open_observer

    settings = load_settings(data_dir=tmp_path / "data", graph_model="scripted:graph")
    observer = open_observer(settings)
    with Lake.open(settings) as lake:
        lake.sources.add("crm", crm_url)
        yield Resources(settings, lake=lake, observer=observer)
    observer.close()


def test_the_thinker_answers_from_a_source_table(resources: Resources, model: ScriptedProvider) -> None:
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM crm.orders WHERE status = 'open'"})))
    model.enqueue(step("There are 2 open orders."))
    ctx = FakeContext(
        reach=(("output", "data"), ("ui", "data")),
        resources=resources,
        models=NodeModels(resources.settings, "thinker", "test-turn", "0" * 32),
    )
    ctx.session.remember("user", "how many open orders?")
    cls = node_class("thinker_v1")
    thinker = cls("thinker", cls.Config.model_validate({}))

    reply, results = thinker.run(Packet("message", {"text": "how many open orders?"}), ctx)

    assert reply.payload["text"] == "There are 2 open orders."
    assert results.payload["results"][0]["data"] == [{"n": 2}]
