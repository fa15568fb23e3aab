"""The audited tool registry: typed arguments, a catalog from real schemas, every call an op."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agentlake.agents import ToolOutput, ToolRegistry, default_tools
from agentlake.errors import UserError


def test_catalog_comes_from_tool_schemas_and_real_columns(lake) -> None:
    registry = default_tools()
    text = registry.catalog_text(lake)
    assert "- sql(query: str (one read-only SELECT), max_rows: int = 50)" in text
    assert "- nearby_cities(city: str, state: str (2-letter code), radius_miles: float = 25.0)" in text
    assert "- workers (4000 rows): worker_id integer, name varchar, role varchar" in text
    assert "placements (" in text
    assert "shift_start timestamp" in text
    names = [schema["name"] for schema in registry.schemas()]
    assert names == [
        "find_workers",
        "hybrid_search",
        "sql",
        "get_worker",
        "worker_schedule",
        "schedule_conflicts",
        "nearby_cities",
    ]
    sql_schema = next(s for s in registry.schemas() if s["name"] == "sql")["parameters"]
    assert sql_schema["required"] == ["query"]
    assert sql_schema["additionalProperties"] is False


def test_every_call_is_recorded_with_rows_and_outcome(make_ctx, sink) -> None:
    ctx = make_ctx(agent_id="staffer-7", run_id="r-1", labels={"batch": 1})
    ok = ctx.tools.call(
        "sql", {"query": "SELECT worker_id, name FROM workers ORDER BY worker_id LIMIT 3"}, ctx=ctx
    )
    empty = ctx.tools.call("sql", {"query": "SELECT worker_id FROM workers WHERE worker_id < 0"}, ctx=ctx)
    refused = ctx.tools.call("sql", {"query": "DELETE FROM workers"}, ctx=ctx)
    bad_args = ctx.tools.call("sql", {"sql": "SELECT 1"}, ctx=ctx)
    unknown = ctx.tools.call("drop_everything", {}, ctx=ctx)

    assert ok.ok
    assert ok.rows == 3
    assert ok.worker_ids == [1, 2, 3]
    assert ok.text.startswith("3 rows:")
    assert empty.ok
    assert empty.rows == 0
    assert empty.text == "0 rows."
    assert not refused.ok
    assert "DELETE" in refused.error
    assert not bad_args.ok
    assert "bad arguments for sql" in bad_args.error
    assert "query: Field required" in bad_args.error
    assert not unknown.ok
    assert "unknown tool 'drop_everything'" in unknown.error
    ops = sink.ops
    assert [op.endpoint for op in ops] == ["tool.sql"] * 4 + ["tool.unknown"]
    assert [op.success for op in ops] == [True, True, False, False, False]
    assert [op.attributes["rows"] for op in ops] == [3, 0, 0, 0, 0]
    assert all(op.agent_id == "staffer-7" and op.source == "agent" and op.run_id == "r-1" for op in ops)
    assert "DELETE" in ops[2].error
    assert ops[0].duration_ms > 0
    assert "SELECT worker_id, name FROM workers" in ops[0].input_summary
    # The lake was not touched.
    assert lake_count(ctx) == 4000


def lake_count(ctx) -> int:
    return ctx.lake.query("SELECT count(*) AS n FROM workers").rows[0][0]


def test_find_workers_and_get_worker(make_ctx, order, qualified) -> None:
    ctx = make_ctx()
    found = ctx.tools.call(
        "find_workers", {"role": "warehouse worker", "city": "New York", "state": "NY", "limit": 5}, ctx=ctx
    )
    assert found.ok
    assert found.rows == 5
    assert found.worker_ids[0] == qualified[0]
    assert "distance_miles=" in found.text
    assert "email" not in found.text
    worker = ctx.tools.call("get_worker", {"worker_id": qualified[0]}, ctx=ctx)
    assert worker.ok
    assert worker.data["worker"]["worker_id"] == qualified[0]
    assert "role=Warehouse Associate" in worker.text
    missing = ctx.tools.call("get_worker", {"worker_id": 123456789}, ctx=ctx)
    assert not missing.ok
    assert "no worker with worker_id 123456789" in missing.error


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            {"requirements": ["certifications: 'Certified Warehouse Pro'"]},
            "\"certifications: 'Certified Warehouse Pro'\" is not a known certification",
        ),
        ({"requirements": ["Warehouse Associate"]}, "it names the role, not a certification"),
        ({"role": "Warehous Asociate"}, "the closest known roles are Warehouse Associate"),
        ({"requirements": ["ASME Section IX"]}, "The filter 'holding ASME Section IX' left no one"),
    ],
)
def test_find_workers_says_why_it_found_no_one(make_ctx, args, says) -> None:
    ctx = make_ctx()
    found = ctx.tools.call(
        "find_workers", {"role": "Warehouse Associate", "city": "New York", "state": "NY", **args}, ctx=ctx
    )
    assert found.ok
    assert found.rows == 0
    assert says in found.text


def test_an_unknown_certification_names_what_the_role_holds(make_ctx) -> None:
    ctx = make_ctx()
    found = ctx.tools.call(
        "find_workers",
        {"role": "Welder", "city": "New York", "state": "NY", "requirements": ["Certified Welder"]},
        ctx=ctx,
    )
    assert "Welder workers hold: AWS D1.1, OSHA 10, OSHA 30, ASME Section IX" in found.text


def test_find_workers_takes_what_small_models_write(make_ctx) -> None:
    ctx = make_ctx()
    found = ctx.tools.call(
        "find_workers",
        {
            "role": "Warehouse Associate",
            "city": "New York",
            "state": "NY",
            "requirements": "OSHA 10",
            "count": 3,
        },
        ctx=ctx,
    )
    assert found.ok
    assert found.text.startswith("(ignored unknown arguments: count)")
    assert found.rows > 0
    assert "OSHA" in found.text


def test_schedule_tools_see_lake_placements_and_run_bookings(make_ctx, lake) -> None:
    from agentlake.agents import Booking

    (row,) = lake.read_arrow(
        "SELECT worker_id, shift_start, shift_end FROM placements WHERE status = 'scheduled' ORDER BY worker_id LIMIT 1"
    ).to_pylist()
    ctx = make_ctx()
    ctx.schedule.add(
        Booking(
            worker_id=row["worker_id"],
            start=row["shift_end"],
            end=row["shift_end"].replace(hour=23),
            client_name="Night Co",
        )
    )
    schedule = ctx.tools.call("worker_schedule", {"worker_id": row["worker_id"]}, ctx=ctx)
    assert schedule.ok
    assert "Night Co" in schedule.text
    assert row["shift_start"].strftime("%Y-%m-%d") in schedule.text
    window = {"start": row["shift_start"].isoformat(), "end": row["shift_end"].isoformat()}
    clashes = ctx.tools.call(
        "schedule_conflicts", {"worker_ids": [row["worker_id"], 1, 2], **window}, ctx=ctx
    )
    assert clashes.ok
    assert row["worker_id"] in clashes.data["conflicts"]
    assert row["worker_id"] not in clashes.worker_ids  # only free workers go to the ledger
    backwards = ctx.tools.call(
        "schedule_conflicts", {"worker_ids": [1], "start": window["end"], "end": window["start"]}, ctx=ctx
    )
    assert not backwards.ok
    assert "end must be after start" in backwards.error


def test_nearby_cities_resolves_by_state(make_ctx) -> None:
    ctx = make_ctx()
    ohio = ctx.tools.call("nearby_cities", {"city": "Columbus", "state": "OH", "radius_miles": 5}, ctx=ctx)
    georgia = ctx.tools.call("nearby_cities", {"city": "Columbus", "state": "ga", "radius_miles": 5}, ctx=ctx)
    assert ohio.data[0] == {"city": "Columbus", "state": "OH", "distance_miles": 0.0}
    assert georgia.data[0]["state"] == "GA"
    newark = ctx.tools.call("nearby_cities", {"city": "New York", "state": "NY", "radius_miles": 12}, ctx=ctx)
    near = {(c["city"], c["state"]): c["distance_miles"] for c in newark.data}
    assert 8 < near[("Newark", "NJ")] < 10
    assert ("Philadelphia", "PA") not in near
    unknown = ctx.tools.call("nearby_cities", {"city": "Columbus", "state": "TX"}, ctx=ctx)
    assert not unknown.ok
    assert "Columbus exists in GA, OH" in unknown.error


def test_a_third_party_tool_registers_through_the_same_door(make_ctx, sink) -> None:
    class EchoArgs(BaseModel):
        text: str

    class Echo:
        name = "echo"
        description = "repeat the text"
        args_model = EchoArgs

        def run(self, args: EchoArgs, ctx) -> ToolOutput:
            return ToolOutput(data=args.text, text=args.text.upper(), rows=1)

    registry = ToolRegistry([Echo()])
    with pytest.raises(UserError, match="already registered"):
        registry.register(Echo())
    with pytest.raises(UserError, match="is not a Tool"):
        registry.register(object())  # type: ignore[arg-type]
    ctx = make_ctx(tools=registry)
    assert ctx.tools.call("echo", {"text": "hi"}, ctx=ctx).text == "HI"
    assert "- echo(text: str): repeat the text" in registry.catalog_text()
    assert sink.endpoint("tool.echo")[0].output_summary == "HI"


@pytest.mark.slow
def test_hybrid_search_tool_over_a_real_index(tmp_path, sink) -> None:
    from agentlake.agents import RunContext
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    with Lake.open(load_settings(), path=tmp_path / "small.duckdb") as small:
        load_workforce(small, generate_workforce(80, seed=3, clients=10))
        build_index(small, "workers", "resume_text")
        ctx = RunContext(lake=small, agent_id="searcher")
        result = ctx.tools.call(
            "hybrid_search",
            {"question": "welder with TIG and structural steel", "where": "role = 'Welder'", "k": 3},
            ctx=ctx,
        )
        refused = ctx.tools.call(
            "hybrid_search", {"question": "x", "where": "1=1; DROP TABLE workers"}, ctx=ctx
        )
        roles = {
            row["role"]
            for row in small.read_arrow(
                f"SELECT role FROM workers WHERE worker_id IN ({', '.join(map(str, result.worker_ids))})"
            ).to_pylist()
        }
    assert result.ok
    assert 1 <= result.rows <= 3
    assert roles == {"Welder"}
    assert result.text.startswith(f"{result.rows} results:")
    assert "score=" in result.text
    assert not refused.ok
    op = sink.endpoint("tool.hybrid_search")[0]
    assert op.success
    assert op.attributes["rows"] == result.rows
    assert op.agent_id == "searcher"


def _executor_schema(**kwargs: Any) -> dict[str, Any]:
    from agentlake.agents.actions import executor_schema

    tools = {schema["name"]: schema["parameters"] for schema in default_tools().schemas()}
    return executor_schema(tools, [], 3, **kwargs)


def _matches(reply: dict[str, Any], schema: dict[str, Any]) -> bool:
    import jsonschema

    return jsonschema.Draft202012Validator(schema).is_valid(reply)


def test_a_tool_call_with_its_own_arguments_matches_the_action_schema() -> None:
    reply = {
        "kind": "tool_call",
        "tool": "find_workers",
        "args": {"role": "Welder", "city": "Cleveland", "state": "OH"},
    }
    assert _matches(reply, _executor_schema())


def test_a_tool_call_without_its_required_arguments_does_not_match() -> None:
    # The 1.5B called find_workers() with nothing; under the grammar it now cannot.
    assert not _matches({"kind": "tool_call", "tool": "find_workers", "args": {}}, _executor_schema())


def test_an_argument_no_tool_takes_does_not_match() -> None:
    args = {"role": "Welder", "city": "Cleveland", "state": "OH", "certification": "AWS"}
    assert not _matches({"kind": "tool_call", "tool": "find_workers", "args": args}, _executor_schema())


def test_one_tools_arguments_do_not_pass_for_another_tool() -> None:
    args = {"role": "Welder", "city": "Cleveland", "state": "OH"}
    assert not _matches({"kind": "tool_call", "tool": "get_worker", "args": args}, _executor_schema())


def test_a_tool_without_required_arguments_may_be_called_without_args() -> None:
    from agentlake.agents.actions import executor_schema

    schema = executor_schema(
        {"ping": {"type": "object", "properties": {}, "additionalProperties": False}}, [], 1
    )
    assert _matches({"kind": "tool_call", "tool": "ping"}, schema)


def _find_welders(requirements: list[str]) -> dict[str, Any]:
    args = {"role": "Welder", "city": "Cleveland", "state": "OH", "requirements": requirements}
    return {"kind": "tool_call", "tool": "find_workers", "args": args}


def test_a_catalogue_certification_is_a_requirement_the_action_schema_takes() -> None:
    assert _matches(_find_welders(["AWS D1.1", "OSHA 10"]), _executor_schema())


def test_a_requirement_outside_the_catalogue_does_not_match() -> None:
    # The 0.5B wrote '.NET' and a lesson's id as requirements and repeated the empty search.
    assert not _matches(_find_welders([".NET", "L-ea6bb2f0b5"]), _executor_schema())


def test_a_blank_requirement_does_not_match() -> None:
    assert not _matches(_find_welders([""]), _executor_schema())


def test_find_workers_still_reads_a_spelling_variant_of_a_certification(make_ctx) -> None:
    ctx = make_ctx()
    args = {
        "role": "Warehouse Associate",
        "city": "New York",
        "state": "NY",
        "requirements": ["OSHA-10 Hour"],
    }
    assert ctx.tools.call("find_workers", args, ctx=ctx).rows > 0


def test_a_tool_whose_arguments_nest_a_model_resolves_in_the_action_schema() -> None:
    from pydantic import BaseModel

    from agentlake.agents.actions import executor_schema, json_schema

    class Shift(BaseModel):
        start: str
        end: str

    class PlanShiftArgs(BaseModel):
        shift: Shift

    schema = executor_schema({"plan_shift": json_schema(PlanShiftArgs)}, [], 1)
    call = {"kind": "tool_call", "tool": "plan_shift", "args": {"shift": {"start": "08:00", "end": "16:00"}}}
    assert _matches(call, schema)


def _find_welders_with(**args: Any) -> dict[str, Any]:
    call = _find_welders([])
    call["args"].update(args)
    return call


def test_a_known_score_is_a_min_score_the_action_schema_takes() -> None:
    assert _matches(_find_welders_with(min_scores={"reliability": 0.7}), _executor_schema())


def test_a_min_score_of_a_models_own_naming_does_not_match() -> None:
    # A free-keyed object let a model write keys of 64 characters, 16 of them, under a grammar.
    assert not _matches(_find_welders_with(min_scores={"dependability": 0.7}), _executor_schema())


def test_a_state_is_two_letters_in_the_action_schema() -> None:
    assert not _matches(_find_welders_with(state="Ohio"), _executor_schema())


def test_a_role_longer_than_any_name_does_not_match() -> None:
    assert not _matches(_find_welders_with(role="Welder " * 20), _executor_schema())


def test_a_search_over_a_lake_without_indexes_says_to_use_sql(make_ctx) -> None:
    from agentlake.agents.tools import lake_tools

    ctx = make_ctx(tools=lake_tools())

    result = ctx.tools.call("hybrid_search", {"question": "forklift"}, ctx=ctx)

    assert result.error == "no dataset in this lake has a search index; use sql"
