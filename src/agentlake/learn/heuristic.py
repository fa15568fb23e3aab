"""The heuristic extractor: lessons from ops by rules, no model needed.

Owns reading the op conventions (``docs/learning.md`` has the table) into lesson drafts:

- ``fill.judged`` rejections -> client rules with a machine action, scoped to the client (and
  to the role when the rejection says so, or names the role): ``required_certification`` ->
  ``require_certifications``; ``min_<score>`` (e.g. ``min_reliability``) -> ``min_scores``;
  ``max_distance_miles``; ``exclude_prior_no_show`` -> ``exclude_prior_no_show_at_client``;
  ``double_booked`` -> ``exclude_double_booked`` for every fill (a person cannot work two
  shifts at once, whoever the client); other rules -> a lesson in words for the client;
- emergency fills that ran short -> ``min_candidate_buffer`` for that client's emergencies;
- failed ``tool.*`` ops -> failure-signature lessons (SQL errors by normalised message,
  timeouts, empty results), matched by tool and error signature;
- the same successful tool sequence in >= 2 runs of a task kind -> a playbook lesson.

Confidence reflects how the lesson was learned. A client's rejection is the client stating a
rule, not an inference, so it starts at 0.8: active at once, so the very next batch applies it
(and measured effect retires it if it hurts). Guesses (buffers, failure signatures,
playbooks) start pending (0.5-0.6); they are still given to runs as "(trial)" lessons so their
effect can be measured, and confirmations raise them.

It does not own curation (``curation``) or choosing an extractor (``extractor``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.learn.extractor import ExtractContext, register_extractor
from agentlake.learn.model import MAX_EVIDENCE_IDS, Delta, LessonDraft, LessonMatch, MachineAction

if TYPE_CHECKING:
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

CLIENT_RULE_CONFIDENCE = 0.8
BUFFER_CONFIDENCE = 0.6
SIGNATURE_CONFIDENCE = 0.5
PLAYBOOK_CONFIDENCE = 0.5
PLAYBOOK_MIN_RUNS = 2
PLAYBOOK_MAX_STEPS = 8
FILL_ENDPOINTS = frozenset({"fill.judged"})
OUTCOME_ENDPOINTS = frozenset({"fill.judged", "task.fill"})

_TIMEOUT = re.compile(r"time(d)?[ -]?out|timeout|interrupted|deadline exceeded", re.IGNORECASE)


def error_signature(error: str) -> str:
    """The first line of an error with quoted names and numbers replaced: stable across calls.

    'Binder Error: Referenced column "wage" not found in FROM clause!' ->
    'Binder Error: Referenced column <q> not found in FROM clause!'
    """
    lines = [line for line in error.strip().splitlines() if line.strip()]
    line = lines[0] if lines else "error"
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
    values: list[float] = field(default_factory=list)
    count: int = 0

    def add(self, op_id: str, excerpt: str | None = None, value: float | None = None) -> None:
        self.count += 1
        if op_id not in self.op_ids:
            self.op_ids.append(op_id)
        if excerpt and excerpt not in self.excerpts and len(self.excerpts) < 3:
            self.excerpts.append(excerpt)
        if value is not None:
            self.values.append(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


class HeuristicExtractor:
    """Rules over op conventions; see the module docstring. Never raises on odd ops."""

    name = "heuristic"

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]:
        drafts = (
            self._client_rules(ops)
            + self._emergency_buffers(ops)
            + self._failure_signatures(ops)
            + self._playbooks(ops)
        )
        for draft in drafts:
            draft.project_id = context.project_id
        context.notes["heuristic_drafts"] = len(drafts)
        return [Delta(op="ADD", lesson=draft, actor="heuristic", reason=_reason(draft)) for draft in drafts]

    # --- client rejections ---------------------------------------------------------------

    def _client_rules(self, ops: Sequence[ObservedOp]) -> list[LessonDraft]:
        groups: dict[tuple[Any, ...], _Group] = defaultdict(_Group)
        meta: dict[tuple[Any, ...], tuple[LessonMatch, str, str, MachineAction | None]] = {}
        for op in ops:
            if op.endpoint not in FILL_ENDPOINTS:
                continue
            rejections = op.attributes.get("rejections")
            if not isinstance(rejections, list):
                continue
            client = _text(op.attributes.get("client_id"))
            role = _text(op.provenance.role or op.attributes.get("role"))
            for rejection in rejections:
                if not isinstance(rejection, dict):
                    continue
                lesson = _rule_lesson(rejection, client, role)
                if lesson is None:
                    continue
                key, match, trigger, action, machine = lesson
                worker = rejection.get("worker_id")
                reason = _text(rejection.get("reason")) or str(rejection.get("rule"))
                excerpt = (
                    f"{client or 'client'} rejected worker {worker}: {reason}"
                    if worker is not None
                    else reason
                )
                groups[key].add(op.id, excerpt)
                meta[key] = (match, trigger, action, machine)
        drafts = []
        for key, group in groups.items():
            match, trigger, action, machine = meta[key]
            drafts.append(
                LessonDraft(
                    trigger=trigger,
                    action=action,
                    match=match,
                    machine=machine,
                    domain="staffing",
                    confidence=CLIENT_RULE_CONFIDENCE if machine is not None else SIGNATURE_CONFIDENCE,
                    evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                    evidence_excerpts=group.excerpts,
                    source="heuristic",
                )
            )
        return drafts

    # --- emergencies that ran short ----------------------------------------------------------

    def _emergency_buffers(self, ops: Sequence[ObservedOp]) -> list[LessonDraft]:
        groups: dict[tuple[str, str | None], _Group] = defaultdict(_Group)
        for op in ops:
            if op.endpoint not in FILL_ENDPOINTS:
                continue
            kind = _text(op.attributes.get("task_kind") or op.provenance.event_kind) or ""
            requested, filled = _int(op.attributes.get("requested")), _int(op.attributes.get("filled"))
            if (
                "emergency" not in kind.casefold()
                or requested is None
                or filled is None
                or filled >= requested
            ):
                continue
            client = _text(op.attributes.get("client_id"))
            groups[(kind, client)].add(
                op.id, f"{kind} for {client or 'a client'} filled {filled}/{requested}", requested - filled
            )
        drafts = []
        for (kind, client), group in groups.items():
            buffer = max(2, int(max(group.values)))
            who = f" for {client}" if client else ""
            drafts.append(
                LessonDraft(
                    trigger=f"{kind.replace('_', ' ').capitalize()}{who}",
                    action=f"Emergency fills{who} ran short: verify at least {buffer} spare candidates beyond the "
                    "requested count so rejected workers can be replaced at once",
                    match=LessonMatch(task_kind=kind, client_id=client),
                    machine=MachineAction(min_candidate_buffer=buffer),
                    domain="staffing",
                    confidence=BUFFER_CONFIDENCE,
                    evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                    evidence_excerpts=group.excerpts,
                )
            )
        return drafts

    # --- failure signatures ----------------------------------------------------------------

    def _failure_signatures(self, ops: Sequence[ObservedOp]) -> list[LessonDraft]:
        groups: dict[tuple[str, str], _Group] = defaultdict(_Group)
        examples: dict[tuple[str, str], str] = {}
        for op in ops:
            if not op.endpoint.startswith("tool."):
                continue
            tool = op.endpoint[len("tool.") :]
            if not op.success:
                error = op.error or "failed without a message"
                signature = (
                    "timeout"
                    if _TIMEOUT.search(error) or op.attributes.get("timeout")
                    else error_signature(error)
                )
                key = (tool, signature)
                groups[key].add(op.id, f"{op.endpoint}: {error.splitlines()[0][:150]}")
                examples.setdefault(key, error)
            elif _int(op.attributes.get("rows")) == 0:
                key = (tool, "empty result")
                what = op.input_summary[:120] or "the call"
                groups[key].add(op.id, f"{op.endpoint} returned no rows for {what}")
        drafts = []
        for (tool, signature), group in groups.items():
            trigger, action = _signature_lesson(tool, signature, examples.get((tool, signature), ""))
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
            run_id = op.provenance.run_id
            if not run_id:
                continue
            if op.endpoint.startswith("tool."):
                tools[run_id].append(op)
            elif op.endpoint in OUTCOME_ENDPOINTS:
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
            kind = _text(outcome.attributes.get("task_kind") or outcome.provenance.event_kind) or "task"
            sequences[(kind, tuple(names[:PLAYBOOK_MAX_STEPS]))].add(
                outcome.id, f"run {run_id}: {' -> '.join(names)}"
            )
        best: dict[str, list[tuple[int, tuple[str, ...], _Group]]] = defaultdict(list)
        for (kind, names), group in sequences.items():
            if group.count >= PLAYBOOK_MIN_RUNS:
                best[kind].append((group.count, names, group))
        drafts = []
        for kind, found in best.items():
            for count, names, group in sorted(found, key=lambda item: (-item[0], item[1]))[:2]:
                drafts.append(
                    LessonDraft(
                        trigger=f"Doing a {kind.replace('_', ' ')} task",
                        action=f"A tool sequence that succeeded in {count} runs: {' -> '.join(names)}",
                        match=LessonMatch(task_kind=kind),
                        domain="playbook",
                        confidence=min(0.75, PLAYBOOK_CONFIDENCE + 0.05 * (count - PLAYBOOK_MIN_RUNS)),
                        evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                        evidence_excerpts=group.excerpts,
                    )
                )
        return drafts


def _role_specific(rejection: dict[str, Any], role: str | None) -> bool:
    if role is None:
        return False
    if rejection.get("role_specific") or rejection.get("scope") == "role":
        return True
    if rejection.get("scope") in ("client", "site"):
        return False
    reason = (_text(rejection.get("reason")) or "").casefold()
    return bool(re.search(rf"\b{re.escape(role.casefold())}", reason))


def _rule_lesson(
    rejection: dict[str, Any], client: str | None, role: str | None
) -> tuple[tuple[Any, ...], LessonMatch, str, str, MachineAction | None] | None:
    """(group key, match, trigger, action, machine) for one rejection, or ``None`` to skip it."""
    rule = _text(rejection.get("rule"))
    if not rule:
        return None
    value = rejection.get("value")
    if rule == "double_booked":
        machine = MachineAction(exclude_double_booked=True)
        return (
            ("double_booked",),
            LessonMatch(),
            "Any fill with a shift time",
            "Check each worker's schedule and exclude anyone already booked over the shift",
            machine,
        )
    if client is None:
        return None  # a client's rule without the client cannot be scoped
    scoped_role = role if _role_specific(rejection, role) else None
    match = LessonMatch(client_id=client, role=scoped_role)
    trigger = f"Filling {scoped_role} for {client}" if scoped_role else f"Filling any role for {client}"
    machine: MachineAction | None
    if rule == "required_certification":
        cert = _text(value)
        if not cert:
            return None
        machine = MachineAction(require_certifications=[cert])
        action = f"Only propose workers with {cert} on file: {client} rejects workers without it"
        what: Any = cert.casefold()
    elif rule.startswith("min_"):
        number = _number(value)
        score = rule[len("min_") :]
        if number is None or number < 0 or not score:
            return None
        machine = MachineAction(min_scores={score: number})
        action = f"Only propose workers with {score} >= {number:g}: {client} rejects lower"
        what = round(number, 6)
    elif rule == "max_distance_miles":
        number = _number(value)
        if number is None or number <= 0:
            return None
        machine = MachineAction(max_distance_miles=number)
        action = (
            f"Only propose workers living within {number:g} miles of the site: {client} rejects farther ones"
        )
        what = round(number, 6)
    elif rule == "exclude_prior_no_show":
        machine = MachineAction(exclude_prior_no_show_at_client=True)
        action = f"Exclude workers who were ever a no-show at {client}: {client} rejects them"
        what = True
    else:
        machine = None
        action = (
            f"{client} rejects workers under its rule '{rule}'; check candidates against it before proposing"
        )
        what = None
    return ((client.casefold(), (scoped_role or "").casefold(), rule, what), match, trigger, action, machine)


def _signature_lesson(tool: str, signature: str, example: str) -> tuple[str, str]:
    name = _quoted(example)
    if signature == "timeout":
        return (
            f"When tool.{tool} times out",
            "Narrow the call before retrying: add selective conditions (role, state, radius) and a LIMIT, "
            "and prefer indexed search filters over scanning whole tables",
        )
    if signature == "empty result":
        return (
            f"When tool.{tool} returns no rows",
            "Widen before concluding nobody fits: check the role's spelling against the catalogue, widen the "
            "radius, drop optional filters one at a time",
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


def _factory(settings: Settings) -> HeuristicExtractor:
    return HeuristicExtractor()


register_extractor("heuristic", _factory, replace=True)
