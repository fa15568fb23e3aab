"""The rule extractors: lessons from ops by rules, no model needed, for any domain.

Owns the lessons any task's ops teach (``ToolHeuristics``; ``docs/learning.md`` has the op
conventions):

- failed ``tool.*`` ops -> failure-signature lessons (SQL errors by normalised message,
  timeouts, empty results), matched by tool and error signature;
- the same successful tool sequence in >= 2 runs of a task kind -> a playbook lesson;

and the two built-in extractors every learning cycle runs one of: ``heuristic`` (every
registered domain's rule extractors, then ``ToolHeuristics``) and ``induction`` (the same,
then every domain's inducers). Guesses (failure signatures, playbooks) start pending
(0.5-0.6); they are still given to runs as "(trial)" lessons so their effect can be
measured, and confirmations raise them.

It does not own curation (``curation``), choosing an extractor (``extractor``) or any
domain's rules (a domain's ``rules``/``inducers``: ``domain.Domain``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.learn.domain import all_domains, find_domain
from agentlake.learn.extractor import ExtractContext, Extractor, register_extractor
from agentlake.learn.model import MAX_EVIDENCE_IDS, Delta, LessonDraft, LessonMatch

if TYPE_CHECKING:
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

SIGNATURE_CONFIDENCE = 0.5
PLAYBOOK_CONFIDENCE = 0.5
PLAYBOOK_MIN_RUNS = 2
PLAYBOOK_MAX_STEPS = 8
# The label naming the domain an op's task belongs to (a domain stamps it on its tasks' ops).
DOMAIN_LABEL = "domain"
# An op that ends a run: it states the run's outcome (``loop.OUTCOME``) or is a task's own op.
TASK_PREFIX = "task."

_TIMEOUT = re.compile(r"time(d)?[ -]?out|timeout|interrupted|deadline exceeded", re.IGNORECASE)


def error_signature(error: str) -> str:
    """The first line of an error with quoted names and numbers replaced: stable across calls.

    'Binder Error: Referenced column "wage" not found in FROM clause!' ->
    'Binder Error: Referenced column <q> not found in FROM clause!'
    """
    lines = [line for line in error.strip().splitlines() if line.strip()]
    line = lines[0] if lines else "error"
    # A hint the database appends on the same line names the query's own identifiers.
    line = re.split(r" (?:Did you mean|Candidate bindings)\b", line, maxsplit=1)[0]
    line = re.sub(r"\"[^\"]*\"|'[^']*'|`[^`]*`", "<q>", line)
    line = re.sub(r"\b\d+(?:\.\d+)?\b", "<n>", line)
    return " ".join(line.split())[:160]


def _quoted(error: str) -> str | None:
    found = re.search(r"\"([^\"]+)\"|'([^']+)'", error)
    return (found.group(1) or found.group(2)) if found else None


@dataclass
class _Group:
    """Ops backing one lesson draft."""

    op_ids: list[str] = field(default_factory=list)
    excerpts: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, op_id: str, excerpt: str | None = None) -> None:
        self.count += 1
        if op_id not in self.op_ids:
            self.op_ids.append(op_id)
        if excerpt and excerpt not in self.excerpts and len(self.excerpts) < 3:
            self.excerpts.append(excerpt)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _int(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) else None


class ToolHeuristics:
    """Failure signatures and playbooks; see the module docstring. Never raises on odd ops."""

    name = "tools"

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]:
        drafts = self._failure_signatures(ops) + self._playbooks(ops)
        for draft in drafts:
            draft.project_id = context.project_id
        return [Delta(op="ADD", lesson=draft, actor="heuristic", reason=_reason(draft)) for draft in drafts]

    # --- failure signatures ----------------------------------------------------------------

    def _failure_signatures(self, ops: Sequence[ObservedOp]) -> list[LessonDraft]:
        # Keyed by the op's domain too (its ``domain`` label): a domain words its own failures.
        groups: dict[tuple[str | None, str, str], _Group] = defaultdict(_Group)
        examples: dict[tuple[str | None, str, str], str] = {}
        for op in ops:
            if not op.endpoint.startswith("tool."):
                continue
            tool = op.endpoint[len("tool.") :]
            domain = _text(op.labels.get(DOMAIN_LABEL))
            if not op.success:
                error = op.error or "failed without a message"
                signature = (
                    "timeout"
                    if _TIMEOUT.search(error) or op.attributes.get("timeout")
                    else error_signature(error)
                )
                key = (domain, tool, signature)
                groups[key].add(op.id, f"{op.endpoint}: {error.splitlines()[0][:150]}")
                examples.setdefault(key, error)
            elif _int(op.attributes.get("rows")) == 0:
                key = (domain, tool, "empty result")
                what = op.input_summary[:120] or "the call"
                groups[key].add(op.id, f"{op.endpoint} returned no rows for {what}")
        drafts = []
        for (domain, tool, signature), group in groups.items():
            example = examples.get((domain, tool, signature), "")
            trigger, action = _signature_lesson(tool, signature, example, domain)
            drafts.append(
                LessonDraft(
                    trigger=trigger,
                    action=action,
                    match=LessonMatch(tool=tool, error_signature=signature),
                    domain="tools",
                    confidence=min(0.75, SIGNATURE_CONFIDENCE + 0.05 * (group.count - 1)),
                    evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                    evidence_excerpts=group.excerpts,
                )
            )
        return drafts

    # --- playbooks -----------------------------------------------------------------------

    def _playbooks(self, ops: Sequence[ObservedOp]) -> list[LessonDraft]:
        tools: dict[str, list[ObservedOp]] = defaultdict(list)
        outcomes: dict[str, ObservedOp] = {}
        for op in ops:
            run_id = op.run_id
            if not run_id:
                continue
            if op.endpoint.startswith("tool."):
                tools[run_id].append(op)
            elif op.endpoint.startswith(TASK_PREFIX) or isinstance(op.attributes.get("outcome"), dict):
                outcomes[run_id] = op
        sequences: dict[tuple[str, tuple[str, ...]], _Group] = defaultdict(_Group)
        for run_id, outcome in outcomes.items():
            steps = sorted(tools.get(run_id, []), key=lambda op: op.ts)
            if not outcome.success or not steps or not all(step.success for step in steps):
                continue
            names: list[str] = []
            for step in steps:
                name = step.endpoint[len("tool.") :]
                if not names or names[-1] != name:
                    names.append(name)
            if len(names) < 2:
                continue
            kind = _text(outcome.attributes.get("task_kind") or outcome.labels.get("event_kind")) or "task"
            sequences[(kind, tuple(names[:PLAYBOOK_MAX_STEPS]))].add(
                outcome.id, f"run {run_id}: {' -> '.join(names)}"
            )
        best: dict[str, list[tuple[int, tuple[str, ...], _Group]]] = defaultdict(list)
        for (kind, sequence), group in sequences.items():
            if group.count >= PLAYBOOK_MIN_RUNS:
                best[kind].append((group.count, sequence, group))
        drafts = []
        for kind, found in best.items():
            for count, sequence, group in sorted(found, key=lambda item: (-item[0], item[1]))[:2]:
                drafts.append(
                    LessonDraft(
                        trigger=f"Doing a {kind.replace('_', ' ')} task",
                        action=f"A tool sequence that succeeded in {count} runs: {' -> '.join(sequence)}",
                        match=LessonMatch(task_kind=kind),
                        domain="playbook",
                        confidence=min(0.75, PLAYBOOK_CONFIDENCE + 0.05 * (count - PLAYBOOK_MIN_RUNS)),
                        evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                        evidence_excerpts=group.excerpts,
                    )
                )
        return drafts


def _signature_lesson(tool: str, signature: str, example: str, domain: str | None = None) -> tuple[str, str]:
    """(trigger, action) of a failure-signature lesson: the op's domain's words when it has
    some for this failure (``Domain.tool_advice``), else these."""
    registered = find_domain(domain)
    advice = registered.tool_advice(tool, signature, example) if registered is not None else None
    if advice is not None:
        return advice
    name = _quoted(example)
    if signature == "timeout":
        return (
            f"When tool.{tool} times out",
            "Narrow the call before retrying: add selective conditions and a LIMIT, and prefer indexed "
            "search filters over scanning whole tables",
        )
    if signature == "empty result":
        return (
            f"When tool.{tool} returns no rows",
            "Widen before concluding nothing fits: check the spelling of each value you filter on against "
            "the catalog, drop optional filters one at a time",
        )
    trigger = f"When tool.{tool} fails with {signature}"
    lowered = signature.casefold()
    if "column" in lowered and (
        "not found" in lowered or "does not have" in lowered or "not exist" in lowered
    ):
        hint = f" ({name!r} is not a column)" if name else ""
        return (
            trigger,
            f"Check the table's columns (DESCRIBE the table or read the catalog) before referencing one{hint}",
        )
    if ("table" in lowered and ("not exist" in lowered or "not found" in lowered)) or lowered.startswith(
        "catalog error"
    ):
        hint = f" ({name!r} does not exist)" if name else ""
        return trigger, f"List the tables in the catalog first and use their exact names{hint}"
    if "parser error" in lowered or "syntax error" in lowered:
        return (
            trigger,
            "Write one plain SELECT statement with balanced quotes and parentheses; check it before sending",
        )
    if "not allowed" in lowered or "read-only" in lowered or "only select" in lowered:
        return trigger, "Send read-only SELECT queries only; writes and other statements are refused"
    return trigger, f"Check the arguments of tool.{tool} before calling it again; it failed with: {signature}"


def _reason(draft: LessonDraft) -> str:
    return (
        f"heuristic: {len(draft.evidence_op_ids)} op(s), e.g. {draft.evidence_excerpts[0]}"
        if draft.evidence_excerpts
        else "heuristic"
    )


class RuleExtractors:
    """Extractors run one after the other, their deltas in that order: the built-in
    ``heuristic`` (every domain's rules, then ``ToolHeuristics``) and ``induction`` (the same,
    then every domain's inducers). The domains are the ones registered when it first extracts;
    ``context.notes["heuristic_drafts"]`` counts the rule extractors' drafts."""

    def __init__(self, name: str, settings: Settings, *, induce: bool) -> None:
        self.name = name
        self.settings = settings
        self.induce = induce
        self._parts: tuple[list[Extractor], list[Extractor]] | None = None

    def parts(self) -> tuple[list[Extractor], list[Extractor]]:
        """(the rule extractors, the inducers), built on first use."""
        if self._parts is None:
            domains = all_domains()
            rules: list[Extractor] = [x for d in domains for x in d.rules(self.settings)]
            rules.append(ToolHeuristics())
            inducers = [x for d in domains for x in d.inducers(self.settings)] if self.induce else []
            self._parts = (rules, inducers)
        return self._parts

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]:
        rules, inducers = self.parts()
        deltas: list[Delta] = []
        for part in rules:
            deltas += part.extract(ops, context)
        context.notes["heuristic_drafts"] = len(deltas)
        for part in inducers:
            deltas += part.extract(ops, context)
        return deltas


class HeuristicExtractor(RuleExtractors):
    """The built-in ``heuristic`` extractor (see ``RuleExtractors``)."""

    def __init__(self, settings: Settings | None = None) -> None:
        # Lazy (start-up time): settings load on first use.
        from agentlake.settings import load_settings

        super().__init__("heuristic", settings or load_settings(), induce=False)


class InductionExtractor(RuleExtractors):
    """The built-in ``induction`` extractor: the heuristic's lessons, then every domain's inducers."""

    def __init__(self, settings: Settings | None = None) -> None:
        # Lazy (start-up time): settings load on first use.
        from agentlake.settings import load_settings

        super().__init__("induction", settings or load_settings(), induce=True)


register_extractor("heuristic", HeuristicExtractor, replace=True)
register_extractor("induction", InductionExtractor, replace=True)
