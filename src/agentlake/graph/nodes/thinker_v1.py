"""``thinker_v1``: answers, calling tools through the LLM layer, audited before it speaks.

Each step is one structured model call (``ThinkerStep``: what to say, which tools to call).
Tool calls run (the lake's read-only SQL and hybrid search, the workspace tools) and their
results go back to the model as tool messages, for at most ``max_tool_rounds`` rounds. A reply
without tool calls is audited first, and retried once per kind with the reason when:

* it contains code (a fenced block or a SELECT ... FROM) but no tool ran it
  (``code_without_tool``): the user would see a query instead of its answer;
* it announces an action ("let me check", "I'll create") but takes none
  (``intent_without_action``);
* it states a number although no tool ran in this turn (``number_without_tool``): a small model
  answers "how many ..." with a number it made up.

* it looks nothing up although the question names values the lake lists (a role, a state) and no
  tool ran (``lookup_missing``): a small model answers "how many welders are in OH?" from nothing.

The retry of an audit that asks for a tool call (code, a number, a missing lookup) is decoded
under a schema that holds at least one call (``sql`` for a missing lookup), so under a grammar
the second reply is a lookup, not the same made-up answer.

What makes a small model (the embedded 0.5B) call its tools, the way ``ask`` does: each step is
decoded under a schema of the real calls (a tool named in the catalog, with that tool's own
arguments); worked examples (a count through ``sql``, a search, a workflow) come after the
constant system prompt, so both stay in the model's prefix cache, and the turn's context (plan,
memory, notes) after them; the values a question names are passed on with it as filters; a
``sql`` call that leaves one of them out, or filters on a listed value the question does not
name, is sent back once, not run, saying which.

When a step only repeats calls already made in the turn (same tool, same arguments), they are
not run again: the answer is asked for from the results alone, in a short prompt, which a small
model reads where it loses them in a long conversation.

What the witness learned about the tables a question is likely about (the data lessons of
``agentlake.questions``, when ``ask_lessons`` is on) is given as ``ask`` gives it: notes and
confirmed queries of alike questions in the turn's context, and names a lesson says are wrong
rewritten by code in a ``sql`` call before it runs. A turn that looked data up is recorded as
an answer (``ask.answer``, with the lessons given and those its query shows it used): its id
goes with the reply, so the buttons under it in the dashboard give feedback the learner reads.

A staffing order (the input node's kind ``order``) takes no step of the thinker's own: its code
hands the text to the ``fill`` tool, where the graph's model reads it (``agents.order_reader``:
the order, checked by the staffing domain, or the question back) and the rules policy fills
it; the reply says what was understood and who was placed, or asks the question, and the
session keeps the order until the next message answers it.

The reply goes to the output node; tool results and requested controls to the ui node. Its
context is the director's plan, the memorizer's compact state and the sensor's notes. It does
not render controls, stream text or keep memory.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import AgentlakeError
from agentlake.graph.controls import value_text
from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, NodeResources, Packet, register_node
from agentlake.graph.toolbox import ThinkerTools, ToolOutcome
from agentlake.llm import Message
from agentlake.llm.fence import DATA_RULE, data_block

if TYPE_CHECKING:
    from agentlake.questions.retrieval import QuestionLessons

MAX_CALLS_PER_STEP = 3
DATA_TOOLS = ("sql", "hybrid_search")  # a turn that called one answered a data question

SYSTEM = """\
ROLE: thinker
You are the thinker of agentlake's conversational graph. You answer the user briefly and
concretely. Anything about data you look up with a tool: never guess a number.
{catalog}

Reply with one JSON object: {{"tool_calls": [{{"tool": "NAME", "args": {{...}}}}], "say": "..."}}
- To use tools, list the calls (at most {max_calls}) and keep "say" empty; their results come back
  as tool messages and you reply again.
- When you have what you need, put the answer in "say" and no tool_calls. Never put a query or
  code in "say": run it. Never announce an action without making the call.
- Query results are shown to the user as a table already: summarise them, do not repeat rows.
- When the user wants a workflow or a process with steps, build a state machine: its buttons move
  it in the browser without you.
{data_rule}"""

AUDIT_FEEDBACK = {
    "code_without_tool": "AUDIT: your reply contains code (a query or a code block) but you called no tool, "
    "so nothing ran and the user would see code instead of an answer. Run it with a tool call (sql for a "
    "SELECT) and answer from the result.",
    "intent_without_action": "AUDIT: your reply says you will do something, but you called no tool, so "
    "nothing happened. Make the tool call now, or answer directly without announcing an action.",
    "number_without_tool": "AUDIT: your reply states a number, but no tool looked anything up, so the "
    "number is a guess. Look it up with a tool call (sql for a count) and answer from the result.",
    "lookup_missing": "AUDIT: the question names values in the lake ({values}), but you looked nothing up. "
    "Call sql with a query that filters on each of them, and answer from its result.",
}
# The audits whose feedback asks for a tool call, and the one tool it names (None: any). Their
# retry is decoded under a schema that holds at least one call of it: a small model asked again
# answers from nothing again (the 0.5B said "There are 12 welders in TX." twice, with 16 in the lake).
MUST_CALL = {"code_without_tool": None, "number_without_tool": None, "lookup_missing": "sql"}
# What the user is told instead of a reply that still states a number, a query or a lookup it
# did not make after its audit's retry: never a made-up number.
UNLOOKED = {
    "number_without_tool": "I did not look this up, so I cannot give you a number; ask me again, more narrowly.",
    "lookup_missing": "I did not look this up in the data, so I cannot answer it; ask me again, more narrowly.",
    "code_without_tool": "I wrote a query but did not run it; ask me again and I will run it.",
}
_CODE = re.compile(r"```|\bSELECT\s+[^;]{1,400}?\s+FROM\s+\w+|^\s*(def|class|import)\s+\w+", re.MULTILINE)
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_INTENT = re.compile(
    r"\b(i'll|i will|let me|i'm going to|i am going to|i'm about to|going to)\s+(now\s+|first\s+|quickly\s+)?"
    r"(check|look|search|query|run|find|fetch|create|set up|build|make|show|pull|count|get|reset|remove|delete|add|"
    r"extend|destroy|calculate|compute)\b",
    re.IGNORECASE,
)


def audit_reply(say: str, *, looked_up: bool = True, names_values: bool = False) -> str | None:
    """Why a reply without tool calls must be retried (``code_without_tool``,
    ``intent_without_action``, and with ``looked_up=False``, when no tool ran in this turn,
    ``lookup_missing`` when the question ``names_values`` of the lake, else
    ``number_without_tool``), or None when it may go to the user."""
    if _CODE.search(say):
        return "code_without_tool"
    if _INTENT.search(say):
        return "intent_without_action"
    if not looked_up and names_values:
        return "lookup_missing"
    if not looked_up and _NUMBER.search(say):
        return "number_without_tool"
    return None


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tool: str = Field(..., min_length=1, max_length=64)
    args: dict[str, Any] = Field(default_factory=dict)


class ThinkerStep(BaseModel):
    """One step of the thinker: tool calls and/or text for the user. The calls come first: under
    constrained decoding a model writes the fields in this order, so it decides whether to look
    something up before it writes an answer."""

    model_config = ConfigDict(extra="ignore")

    tool_calls: list[ToolCall] = Field(default_factory=list, max_length=MAX_CALLS_PER_STEP)
    say: str = ""


# The reply's shape, shown to a model without native schema support instead of the schema.
STEP_EXAMPLE = '{"tool_calls": [{"tool": "sql", "args": {"query": "SELECT ..."}}], "say": ""}'


def step_schema(call_schemas: dict[str, dict[str, Any]], *, must_call: bool = False) -> dict[str, Any]:
    """The JSON schema a step is decoded under: ``ThinkerStep``'s shape, each call one of the
    tools in ``call_schemas`` (name -> its arguments' JSON schema) with that tool's arguments;
    with ``must_call``, at least one call and nothing said (an audit's retry, ``MUST_CALL``).
    Under constrained decoding a model cannot misspell a tool or invent an argument (the 0.5B
    called ``HYbrid_search`` with ``k`` running to the token limit); validation stays
    ``ThinkerStep``'s, so a reply from a provider without native schema support is judged by
    the tools (an unknown tool comes back as an error)."""
    from agentlake.agents.actions import call_branch

    defs: dict[str, Any] = {}
    calls = [call_branch(name, parameters, defs) for name, parameters in call_schemas.items()]
    tool_calls: dict[str, Any] = {"type": "array", "items": {"anyOf": calls}, "maxItems": MAX_CALLS_PER_STEP}
    if must_call:
        tool_calls["minItems"] = 1
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "tool_calls": tool_calls,
            "say": {"type": "string", "const": ""} if must_call else {"type": "string"},
        },
        "required": ["tool_calls", "say"],
        "additionalProperties": False,
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _said(say: str = "", *calls: tuple[str, dict[str, Any]]) -> Message:
    step = ThinkerStep(tool_calls=[ToolCall(tool=tool, args=args) for tool, args in calls], say=say)
    return Message(role="assistant", content=step.model_dump_json())


def _result(tool: str, args: dict[str, Any], text: str, rows: int) -> Message:
    return Message(role="tool", content=ToolOutcome(tool, args, True, text, rows=rows).for_model())


def worked_examples(
    resources: NodeResources, call_schemas: dict[str, dict[str, Any]]
) -> dict[str, tuple[Message, ...]]:
    """One worked exchange per kind of tool, by the tool it calls, made from the user's own lake
    (``agents.examples``): a count through ``sql`` (the same example as ``ask``'s, with the named
    values passed on), a search over an indexed dataset (when ``hybrid_search`` is offered), a
    workflow. Shown before the real conversation, a small model calls a tool, over a real
    table, and answers from its result; constant while the lake is unchanged, so they stay in
    its prefix cache."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.examples import worked_count, worked_search
    from agentlake.agents.linking import named_values_hint

    shots: dict[str, tuple[Message, ...]] = {}
    count = _lake_call(worked_count, resources)
    if count is not None and "sql" in call_schemas:
        args = {"query": count.sql}
        hint = named_values_hint(list(count.named), {(count.table, c): [v] for c, v in count.named})
        shots["sql"] = (
            Message(role="user", content=count.question + hint),
            _said("", ("sql", args)),
            _result("sql", args, f"one value: n = {count.value}", 1),
            _said(count.answer()),
        )
    datasets = call_schemas.get("hybrid_search", {}).get("properties", {}).get("dataset", {}).get("enum")
    search = _lake_call(worked_search, resources, list(datasets or [])) if datasets else None
    if search is not None:
        args = {"dataset": search.dataset, "question": search.search_text}
        shots["hybrid_search"] = (
            Message(role="user", content=search.question),
            _said("", ("hybrid_search", args)),
            _result("hybrid_search", args, f"1 result:\n- key=1 score=0.812: {search.search_text}", 1),
            _said(f"One {search.dataset} row is about {search.search_text}."),
        )
    workflow = {
        "name": "review",
        "states": ["draft", "in review", "approved"],
        "transitions": [
            {"from": "draft", "to": "in review", "label": "submit"},
            {"from": "in review", "to": "approved", "label": "approve"},
        ],
        "initial": "draft",
    }
    shots["machine_create"] = (
        Message(role="user", content="set up a review workflow"),
        _said("", ("machine_create", workflow)),
        _result("machine_create", workflow, "created review: states ['draft', 'in review', 'approved'], now at draft", 0),
        _said("The review workflow is set up: its buttons move it from draft to approved."),
    )  # fmt: skip
    return shots


def _lake_call(fn: Any, resources: NodeResources, *args: Any) -> Any:
    """``fn(resources.lake, *args)``, or None when there is no lake to build it from."""
    try:
        return fn(resources.lake, *args)
    except AgentlakeError:
        return None


class FinalAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    say: str


def answer_example(resources: NodeResources) -> tuple[Message, ...]:
    """The worked count's answer from its result alone: shown one, a small model answers in a
    sentence that quotes the value ("1" was the 0.5B's whole answer without it)."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.examples import worked_count

    count = _lake_call(worked_count, resources)
    if count is None:
        return ()
    result = ToolOutcome("sql", {"query": count.sql}, True, f"one value: n = {count.value}", rows=1)
    return (
        Message(role="user", content=f"Question: {count.question}\n\nTool results:\n{result.for_model()}"),
        Message(role="assistant", content=FinalAnswer(say=count.answer()).model_dump_json()),
    )


ANSWER_FROM_RESULTS = (
    "Answer the user's question in one or two sentences from the tool results below only: "
    'quote their numbers exactly. Reply with one JSON object: {"say": "..."}\n' + DATA_RULE
)


class ThinkerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tool_rounds: int = Field(4, ge=1, le=10)
    history_messages: int = Field(6, ge=0, le=40)
    max_tokens: int = Field(1024, ge=64)
    lake_tools: list[str] = Field(default_factory=lambda: ["sql", "hybrid_search"])


def _facts(outcomes: list[ToolOutcome]) -> list[str]:
    facts = []
    for outcome in outcomes:
        if not outcome.ok:
            facts.append(f"{outcome.tool} failed: {outcome.error}"[:160])
        elif (
            outcome.tool == "sql"
            and isinstance(outcome.data, list)
            and len(outcome.data) == 1
            and len(outcome.data[0]) <= 3
        ):
            facts.append("sql: " + ", ".join(f"{k}={v}" for k, v in outcome.data[0].items()))
        else:
            facts.append(f"{outcome.tool}: {outcome.text.splitlines()[0] if outcome.text else 'ok'}"[:160])
    return facts


@register_node
class ThinkerV1(Node):
    info = NodeInfo(
        name="thinker_v1",
        role="thinker",
        version=1,
        description="Answers with tool calls (read-only SQL, hybrid search, state machines, controls), audited.",
        accepts=("data", "context"),
        emits=("data",),
        uses_llm=True,
    )
    Config = ThinkerConfig
    config: ThinkerConfig  # the loader validates the graph's mapping into it

    def system_prompt(self, tools: ThinkerTools) -> str:
        """The constant part of the prompt: the role, the tools and the datasets, the rules."""
        return SYSTEM.format(catalog=tools.catalog(), max_calls=MAX_CALLS_PER_STEP, data_rule=DATA_RULE)

    def context_prompt(
        self, ctx: NodeContext, plan: dict | None, given: QuestionLessons | None = None
    ) -> str:
        """What this turn adds (machines, the director's plan, memory, sensor notes, the data
        lessons ``given``); empty when nothing. It follows the worked examples, so they stay
        cached across turns."""
        parts = []
        # Lessons hold earlier questions and queries: fenced as data, never obeyed.
        if given is not None and given.examples:
            parts.append(
                "Queries confirmed right for alike questions:\n"
                + data_block("\n".join(f"- {question}\n  sql: {sql}" for question, sql, _ in given.examples))
            )
        if given is not None and given.notes:
            parts.append(data_block(given.notes))
        machines = ctx.session.machines
        if machines:
            lines = [
                f"- {m.name}: at {m.current}; states {m.states}; moves from here: "
                + (", ".join(t.target for t in m.moves()) or "none")
                for m in machines.values()
            ]
            parts.append("State machines in the workspace:\n" + "\n".join(lines))
        if ctx.session.values:
            parts.append("Counts and switches in the workspace: " + "; ".join(
                value_text(name, value) for name, value in ctx.session.values.items()))  # fmt: skip
        if plan:
            parts.append("The director's plan for this request:\n" + json.dumps(plan, ensure_ascii=False))
        if ctx.context.get("memorizer"):
            parts.append(
                "Compact memory of the conversation:\n"
                + json.dumps(ctx.context["memorizer"], ensure_ascii=False)
            )
        notes = (ctx.context.get("sensor") or {}).get("notes")
        if notes:
            parts.append("Sensor notes:\n" + "\n".join(f"- {note}" for note in notes))
        shown = (ctx.context.get("sensor") or {}).get("shown")
        if shown:  # the browser's words: data, never obeyed
            parts.append("The page shows:\n" + data_block("\n".join(f"- {line}" for line in shown)))
        return "\n\n".join(parts)

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        text = str(packet.payload["text"])
        plan = packet.payload.get("plan")
        tools = ThinkerTools(
            ctx.resources, ctx.session, lake_tools=tuple(self.config.lake_tools), agent_id=f"graph.{self.id}"
        )
        if packet.payload.get("kind") == "order":
            return self._order(text, packet.payload.get("answers"), tools, ctx)
        prior = (
            ctx.session.history[:-1][-self.config.history_messages :] if self.config.history_messages else []
        )
        call_schemas = tools.call_schemas()
        schema = step_schema(call_schemas)
        named, hint = tools.named_values(text)
        linked, given = self._lessons(ctx, text)
        renamed: list[str] = []
        context = self.context_prompt(ctx, plan, given)
        messages = [
            Message(role="system", content=self.system_prompt(tools)),
            *(
                m
                for tool, shot in worked_examples(ctx.resources, call_schemas).items()
                if tool in call_schemas
                for m in shot
            ),
            *(
                Message(role=m["role"], content=m["content"])
                for m in prior
                if m["role"] in ("user", "assistant")
            ),
            *([Message(role="system", content=context)] if context else []),
            Message(role="user", content=text + hint),
        ]
        start = len(messages) - 1  # this request: the worked examples' rounds are not its own
        outcomes: list[ToolOutcome] = []
        audited: set[str] = set()
        done: set[str] = set()
        sent_back = False
        answer: str | None = None
        retry_schema: dict[str, Any] | None = None
        for round_number in range(self.config.max_tool_rounds + len(AUDIT_FEEDBACK) + 1):
            step = ctx.models.structured(
                messages,
                ThinkerStep,
                max_tokens=self.config.max_tokens,
                schema=retry_schema or schema,
                example=STEP_EXAMPLE,
            )
            retry_schema = None
            calls = step.tool_calls[:MAX_CALLS_PER_STEP]
            ctx.trace("step", round=round_number, say=step.say[:300], tool_calls=[c.tool for c in calls])
            if calls and self._rounds(messages[start:]) >= self.config.max_tool_rounds:
                ctx.trace("round_limit_ignored", tool_calls=[c.tool for c in calls])
                answer = step.say.strip()
                break
            if calls:
                fresh = [
                    c for c in calls if json.dumps([c.tool, c.args], sort_keys=True, default=str) not in done
                ]
                if not fresh and outcomes:
                    # A small model calls the same tools again instead of reading their results
                    # (and what it says beside them is no answer: the 0.5B said "0 workers in
                    # CA" beside a count of 421): the answer is asked for from the results
                    # alone, in a short prompt.
                    ctx.trace("repeat", tool_calls=[c.tool for c in calls])
                    answer = self._answer_from(ctx, text, outcomes)
                    break
                messages.append(Message(role="assistant", content=step.model_dump_json()))
                for call in fresh:
                    if call.tool == "sql" and given.renames:
                        # A name a lesson says is wrong is written right by code, not by the model.
                        # Lazy (start-up time): the learning layer loads on first use.
                        from agentlake.questions.retrieval import apply_renames

                        query, applied = apply_renames(str(call.args.get("query", "")), given.renames)
                        if applied:
                            ctx.trace("renamed", lessons=applied)
                            renamed += [lesson_id for lesson_id in applied if lesson_id not in renamed]
                            call = ToolCall(tool=call.tool, args={**call.args, "query": query})
                    problem = (
                        tools.query_problem(str(call.args.get("query", "")), text, named)
                        if call.tool == "sql" and not sent_back
                        else None
                    )
                    if problem:
                        # Sent back once, not run: a small model counts "welders in OH" over
                        # every worker in OH (as ask's plans did), or keeps the example's TX.
                        sent_back = True
                        ctx.trace("sent_back", tool=call.tool, args=call.args, problem=problem)
                        error = (
                            f"not run: {problem}; call sql again with the whole query, filtering on "
                            "each value the question names and no other"
                        )
                        messages.append(
                            Message(
                                role="tool",
                                content=ToolOutcome(call.tool, call.args, False, "", error=error).for_model(),
                            )
                        )
                        continue
                    done.add(json.dumps([call.tool, call.args], sort_keys=True, default=str))
                    ctx.hud(f"calling {call.tool}")
                    ctx.trace("tool_call", tool=call.tool, args=call.args)
                    outcome = tools.call(call.tool, call.args)
                    ctx.trace(
                        "tool_result", tool=call.tool, ok=outcome.ok, rows=outcome.rows, error=outcome.error
                    )
                    outcomes.append(outcome)
                    messages.append(Message(role="tool", content=outcome.for_model()))
                if self._rounds(messages[start:]) >= self.config.max_tool_rounds:
                    ctx.trace("round_limit", rounds=self.config.max_tool_rounds)
                    messages.append(
                        Message(
                            role="user",
                            content="That was the last tool round: answer now, without tool calls.",
                        )
                    )
                continue
            kind = audit_reply(step.say, looked_up=bool(outcomes), names_values=bool(named))
            if kind is not None and kind not in audited:
                audited.add(kind)
                ctx.trace("audit", kind=kind, say=step.say[:300])
                ctx.hud(f"audit: {kind.replace('_', ' ')}; asking again", flag=kind)
                values = ", ".join(f"{column} = '{value}'" for column, value in named)
                messages += [
                    Message(role="assistant", content=step.model_dump_json()),
                    Message(role="user", content=AUDIT_FEEDBACK[kind].format(values=values)),
                ]
                if kind in MUST_CALL and call_schemas:
                    named_tool = MUST_CALL[kind]
                    wanted = (
                        {named_tool: call_schemas[named_tool]} if named_tool in call_schemas else call_schemas
                    )
                    retry_schema = step_schema(wanted, must_call=True)
                continue
            if kind is not None:
                ctx.trace("audit_unresolved", kind=kind)
                if kind in UNLOOKED:
                    # Asked once already and still no lookup: the reply's number or query is the
                    # model's own, and a user must never take it for the data's.
                    answer = UNLOOKED[kind]
                    break
            answer = step.say.strip()
            break
        if not answer:
            answer = "I could not reach an answer within my tool rounds; try asking more narrowly."
        ctx.trace("answer", chars=len(answer), tools=len(outcomes), audits=sorted(audited))
        reply: dict[str, Any] = {
            "text": answer,
            "user": text,
            "path": "director" if plan else "thinker",
            "facts": _facts(outcomes),
        }
        answer_id = self._record(ctx, text, answer, outcomes, linked, given, renamed)
        if answer_id is not None:
            reply["answer_id"] = answer_id
        emits = [Emit("reply", reply, to="output")]
        if outcomes and ctx.can_reach("ui"):
            emits.append(Emit("tool_results", {"results": [o.summary() for o in outcomes]}, to="ui"))
        return emits

    def _order(self, text: str, answers: str | None, tools: ThinkerTools, ctx: NodeContext) -> list[Emit]:
        """A staffing order: read by the graph's model and filled by code (``ThinkerTools.fill``),
        or the question back, whose answer the next message brings (``answers``: the order it
        completes, read together with it)."""
        order = f"{answers}; {text}" if answers else text
        ctx.hud("reading the order")
        ctx.trace("order", text=order[:300], answers=answers is not None)
        with ctx.models.on_behalf():
            outcome = tools.fill(order, model=ctx.models.model, now=datetime.fromtimestamp(ctx.now))
        ctx.trace("tool_result", tool="fill", ok=outcome.ok, rows=outcome.rows, error=outcome.error)
        question = outcome.extra.get("question")
        if question:
            ctx.session.pending_order = order
            answer = str(question)
        elif outcome.ok:
            answer = outcome.text
        else:
            answer = f"I could not fill that order: {outcome.error}"
        reply = {"text": answer, "user": text, "path": "order", "facts": _facts([outcome])}
        emits = [Emit("reply", reply, to="output")]
        if outcome.ok and ctx.can_reach("ui"):
            emits.append(Emit("tool_results", {"results": [outcome.summary()]}, to="ui"))
        return emits

    def _lessons(self, ctx: NodeContext, text: str) -> tuple[list[str], QuestionLessons]:
        """The tables ``text`` is likely about and the data lessons about them (none without a
        lake, a lesson store or with ``ask_lessons`` off). A read: nothing is written."""
        # Lazy (start-up time): the agents and the learning layer load on first use.
        from agentlake.agents.linking import link_datasets
        from agentlake.questions.retrieval import QuestionLessons, lessons_for_question

        try:
            linked = link_datasets(text, ctx.resources.lake)
        except AgentlakeError:
            return [], QuestionLessons()
        if not ctx.resources.settings.ask_lessons:
            return linked, QuestionLessons()
        try:
            store = ctx.resources.lessons
            given = lessons_for_question(store, text, linked) if store is not None else QuestionLessons()
        except AgentlakeError as exc:  # the answer goes without lessons, never fails for them
            ctx.trace("lessons_unread", error=exc.message[:200])
            return linked, QuestionLessons()
        if given.lessons:
            ctx.trace("lessons", given=given.ids)
        return linked, given

    def _record(
        self,
        ctx: NodeContext,
        question: str,
        answer: str,
        outcomes: list[ToolOutcome],
        linked: list[str],
        given: QuestionLessons,
        renamed: list[str],
    ) -> str | None:
        """Record the turn as an answer (``ask.answer``) when it looked data up; its id, else
        ``None``."""
        # Lazy (start-up time): the witness's ids load with the first answer.
        from agentlake.observe.model import new_op_id
        from agentlake.questions.feedback import record_answer

        looked = [outcome for outcome in outcomes if outcome.tool in DATA_TOOLS]
        if not looked:
            return None
        ran = [o for o in looked if o.ok and o.tool == "sql"]
        sql = str(ran[-1].args.get("query", "")) if ran else None
        searched = [o for o in looked if o.ok and o.tool == "hybrid_search"]
        attempts = [
            {"route": "sql", "sql": o.args.get("query"), "rows": o.rows}
            if o.tool == "sql"
            else {"route": "search", "dataset": o.args.get("dataset"), "search_text": o.args.get("question")}
            for o in looked
        ]
        for attempt, outcome in zip(attempts, looked, strict=True):
            if outcome.error:
                attempt["error"] = outcome.error
        datasets = linked
        if sql:
            # Lazy (start-up time): as above.
            from agentlake.questions.lessons import tables_of

            datasets = list(dict.fromkeys([*tables_of(sql), *linked]))
        answer_id = new_op_id()
        record_answer(
            answer_id,
            question,
            answer,
            route="sql" if sql else "search" if searched else "none",
            datasets=datasets,
            attempts=attempts,
            observer=ctx.resources.observer,
            sql=sql,
            lessons_given=given.ids,
            lessons_cited=given.cited(sql, renamed) if sql else list(renamed),
            failure=None if sql or searched else "no lookup ran",
            door="graph",
        )
        return answer_id

    def _answer_from(self, ctx: NodeContext, question: str, outcomes: list[ToolOutcome]) -> str:
        """The answer written from the tool results alone (no history, no tools to call)."""
        results = "\n".join(outcome.for_model() for outcome in outcomes)
        reply = ctx.models.structured(
            [
                Message(role="system", content=ANSWER_FROM_RESULTS),
                *answer_example(ctx.resources),
                Message(role="user", content=f"Question: {question}\n\nTool results:\n{results}"),
            ],
            FinalAnswer,
            max_tokens=min(self.config.max_tokens, 300),
        )
        return reply.say.strip()

    @staticmethod
    def _rounds(messages: list[Message]) -> int:
        """Tool rounds so far: assistant messages followed by tool results."""
        return sum(
            1 for i, m in enumerate(messages[:-1]) if m.role == "assistant" and messages[i + 1].role == "tool"
        )
