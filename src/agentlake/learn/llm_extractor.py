"""The LLM extractor: a model proposes at most 3 lessons from the tail of recent ops.

Owns the prompt, the strict candidate schema (via ``agentlake.llm.generate_structured``),
the input cap (the most recent ``tail`` ops, at most ``max_chars`` characters), a hard
timeout (``settings.learn_llm_timeout_s``), a circuit breaker, and validation by code:

- evidence ids must be ops that were shown (hallucinated ids are dropped; a candidate with
  none left is rejected);
- confidence is capped at 0.6: a model's opinion never makes a lesson active by itself
  (confirmations and measured effect do);
- scope is always the project: promotion to global is earned by code (``curation.promote``);
- lessons are words only: machine actions come from the heuristic extractor's exact rules.

On ANY failure (timeout, transport error, invalid or garbage output after the structured
retries, no valid candidate) it falls back to the heuristic extractor and counts a failure;
``breaker_failures`` consecutive failures open the breaker for ``breaker_cooldown_s``, during
which the model is not called at all. The heuristic's deltas are also included on success
(``with_heuristic``), because client rejections are exact facts a model can only restate.
It must never destabilise its host: nothing it does raises out of ``extract``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentlake.errors import RunError, UserError
from agentlake.learn.extractor import ExtractContext, Extractor, register_extractor
from agentlake.learn.heuristic import HeuristicExtractor
from agentlake.learn.model import Delta, LessonDraft, LessonMatch

if TYPE_CHECKING:
    from agentlake.llm import Provider
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

MAX_CANDIDATES = 3
LLM_MAX_CONFIDENCE = 0.6
DEFAULT_TAIL = 40
DEFAULT_MAX_CHARS = 6000
DEFAULT_BREAKER_FAILURES = 3
DEFAULT_BREAKER_COOLDOWN_S = 300.0

SYSTEM_PROMPT = """You are the witness of an operations platform. You read a log of recent operations
(tool calls, tasks and how they ended, failures, feedback) and propose at most {max_candidates} atomic lessons
that would make the next runs succeed more often. A lesson has a trigger (when it applies), an action (what to
do, one imperative sentence), a domain ({domains}), a confidence between 0 and 1, and the ids of the operations
it is based on (copy them exactly from the log). Set task_kind, tool or a key field of the task (in "fields":
{fields}) only when the lesson is specific to it. Propose nothing rather than guess: an empty list is a good
answer. Answer with JSON only, of the form {{"candidates": [...]}}."""


def system_prompt() -> str:
    """The extractor's instructions, naming the registered domains and their tasks' key fields."""
    # Lazy (start-up time): the registered domains load with the first learning cycle.
    from agentlake.learn.domain import all_domains

    domains = all_domains()
    names = ", ".join([*(d.name for d in domains), "tools", "playbook", "general"])
    fields = "; ".join(f"{d.name}: {', '.join(d.key_fields)}" for d in domains) or "none"
    return SYSTEM_PROMPT.format(max_candidates=MAX_CANDIDATES, domains=names, fields=fields)


class LessonCandidate(BaseModel):
    """One lesson as the model proposes it (strict: unknown keys are an error)."""

    model_config = ConfigDict(extra="forbid")

    trigger: str = Field(..., min_length=3, max_length=200)
    action: str = Field(..., min_length=3, max_length=400)
    domain: str = Field("general", min_length=1, max_length=40)
    confidence: float = Field(..., ge=0, le=1)
    task_kind: str | None = Field(None, max_length=100)
    tool: str | None = Field(None, max_length=100)
    fields: dict[str, str] = Field(
        default_factory=dict, max_length=4, description="The task's key fields the lesson is specific to."
    )
    evidence_op_ids: list[str] = Field(..., min_length=1, max_length=10)


class LessonCandidates(BaseModel):
    """The model's whole answer: at most three candidates."""

    model_config = ConfigDict(extra="forbid")

    candidates: list[LessonCandidate] = Field(default_factory=list, max_length=MAX_CANDIDATES)


def render_ops(
    ops: Sequence[ObservedOp], *, tail: int = DEFAULT_TAIL, max_chars: int = DEFAULT_MAX_CHARS
) -> tuple[str, list[str]]:
    """The log shown to the model: the last ``tail`` non-LLM ops, newest kept within ``max_chars``.

    Returns the text and the ids of the ops it shows.
    """
    chosen = sorted((op for op in ops if op.source != "llm"), key=lambda op: op.ts)[-tail:]
    lines: list[str] = []
    ids: list[str] = []
    used = 0
    for op in reversed(chosen):
        parts = [op.id, op.endpoint, "ok" if op.success else "FAILED"]
        if op.run_id:
            parts.append(f"run={op.run_id}")
        if op.input_summary:
            parts.append(f"in={op.input_summary[:160]!r}")
        if op.output_summary:
            parts.append(f"out={op.output_summary[:160]!r}")
        if op.error:
            parts.append(f"error={op.error[:240]!r}")
        if op.attributes:
            parts.append("attrs=" + json.dumps(op.attributes, ensure_ascii=False, default=str)[:400])
        line = " ".join(parts)
        if used + len(line) + 1 > max_chars:
            break
        lines.append(line)
        ids.append(op.id)
        used += len(line) + 1
    return "\n".join(reversed(lines)), list(reversed(ids))


class CircuitBreaker:
    """Consecutive failures open it; after the cooldown one call may probe (half-open)."""

    def __init__(self, failures: int, cooldown_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.failures_to_open = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.consecutive_failures = 0
        self.opened_at: float | None = None

    @property
    def state(self) -> Literal["closed", "open", "half-open"]:
        if self.opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self.opened_at >= self.cooldown_s else "open"

    def allow(self) -> bool:
        return self.state != "open"

    def success(self) -> None:
        self.consecutive_failures = 0
        self.opened_at = None

    def failure(self) -> None:
        self.consecutive_failures += 1
        if self.state == "half-open" or self.consecutive_failures >= self.failures_to_open:
            self.opened_at = self._clock()


class LLMExtractor:
    """See the module docstring. ``model`` is a model string (``ollama:qwen3:4b``) or a Provider."""

    name = "llm"

    def __init__(
        self,
        model: str | Provider,
        *,
        settings: Settings,
        timeout_s: float | None = None,
        fallback: Extractor | None = None,
        with_heuristic: bool = True,
        tail: int = DEFAULT_TAIL,
        max_chars: int = DEFAULT_MAX_CHARS,
        breaker_failures: int = DEFAULT_BREAKER_FAILURES,
        breaker_cooldown_s: float = DEFAULT_BREAKER_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.settings = settings
        self.timeout_s = timeout_s if timeout_s is not None else settings.learn_llm_timeout_s
        self.fallback = fallback or HeuristicExtractor(settings)
        self.with_heuristic = with_heuristic
        self.tail = tail
        self.max_chars = max_chars
        self.breaker = CircuitBreaker(breaker_failures, breaker_cooldown_s, clock)
        self.stats: dict[str, Any] = {
            "calls": 0,
            "failures": 0,
            "fallbacks": 0,
            "skipped_open": 0,
            "last_error": None,
        }
        self._lock = threading.Lock()

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]:
        """LLM candidates (validated) plus the heuristic's deltas; only the heuristic's on failure."""
        heuristic = self._heuristic(ops, context)
        text, shown = render_ops(ops, tail=self.tail, max_chars=self.max_chars)
        if not shown:
            context.notes["llm"] = "no ops to show"
            return heuristic
        with self._lock:
            if not self.breaker.allow():
                self.stats["skipped_open"] += 1
                self.stats["fallbacks"] += 1
                context.notes["llm"] = "breaker open: heuristic only"
                return heuristic
            self.stats["calls"] += 1
        try:
            answer = self._call(text)
            deltas, rejected = self._validate(answer, set(shown), context)
            if answer.candidates and not deltas:
                raise RunError(
                    f"all {len(answer.candidates)} candidate(s) were invalid: {'; '.join(rejected)}"
                )
        except Exception as exc:  # any failure at all: the host must not notice
            with self._lock:
                self.breaker.failure()
                self.stats["failures"] += 1
                self.stats["fallbacks"] += 1
                self.stats["last_error"] = f"{type(exc).__name__}: {exc}"[:500]
            log.warning("llm lesson extractor failed, heuristic takes over: %s", self.stats["last_error"])
            context.notes["llm"] = f"failed ({self.stats['last_error']}): heuristic only"
            return heuristic
        with self._lock:
            self.breaker.success()
        context.notes["llm"] = f"{len(deltas)} candidate(s) accepted, {len(rejected)} rejected"
        if rejected:
            context.notes["llm_rejected"] = rejected
        return (heuristic if self.with_heuristic else []) + deltas

    def _heuristic(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]:
        try:
            return self.fallback.extract(ops, context)
        except Exception as exc:  # a broken fallback still must not break the host
            log.exception("fallback lesson extractor failed")
            context.notes["fallback_error"] = str(exc)[:300]
            return []

    def _call(self, log_text: str) -> LessonCandidates:
        """One structured call under a hard deadline (the thread is abandoned on timeout)."""
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import Message, generate_structured
        from agentlake.llm.fence import DATA_RULE, data_block

        # The fence on lines of its own: every line of the log starts with its op's id.
        fenced = data_block(f"\n{log_text}\n")
        messages = [
            Message(role="system", content=f"{system_prompt()}\n{DATA_RULE}"),
            Message(
                role="user",
                content=f"Recent operations, oldest first:\n{fenced}\n\nPropose at most {MAX_CANDIDATES} lessons.",
            ),
        ]
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = generate_structured(
                    self.model,
                    messages,
                    LessonCandidates,
                    retries=1,
                    settings=self.settings,
                    timeout=self.timeout_s,
                    max_tokens=1024,
                    temperature=self.settings.learn_temperature,
                    think=False,
                )
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=run, name="learn-llm-extractor", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            raise RunError(f"llm lesson extractor: no answer within {self.timeout_s:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _validate(
        self, answer: LessonCandidates, shown: set[str], context: ExtractContext
    ) -> tuple[list[Delta], list[str]]:
        deltas: list[Delta] = []
        rejected: list[str] = []
        for index, candidate in enumerate(answer.candidates):
            evidence = [op_id for op_id in candidate.evidence_op_ids if op_id in shown]
            if not evidence:
                rejected.append(
                    f"#{index}: evidence {candidate.evidence_op_ids[:3]} names no op that was shown"
                )
                continue
            try:
                draft = LessonDraft(
                    trigger=candidate.trigger,
                    action=candidate.action,
                    match=LessonMatch(
                        task_kind=candidate.task_kind, tool=candidate.tool, fields=candidate.fields
                    ),
                    domain=candidate.domain.casefold(),
                    scope="project",
                    project_id=context.project_id,
                    confidence=min(candidate.confidence, LLM_MAX_CONFIDENCE),
                    evidence_op_ids=evidence,
                    evidence_excerpts=[candidate.trigger],
                    source="llm",
                )
            except ValidationError as exc:
                rejected.append(f"#{index}: {exc.errors()[0]['msg']}")
                continue
            deltas.append(
                Delta(op="ADD", lesson=draft, actor="llm", reason=f"llm proposed from {len(evidence)} op(s)")
            )
        return deltas, rejected


def _factory(settings: Settings) -> LLMExtractor:
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import default_model

    model = default_model(settings, "learn_model")
    if not model:
        raise UserError(
            "the llm lesson extractor needs a model: install the embedded models (`make models`), set learn_model "
            "(AGENTLAKE_LEARN_MODEL), e.g. ollama:qwen3:4b, or use learn_extractor=heuristic"
        )
    return LLMExtractor(model, settings=settings)


register_extractor("llm", _factory, replace=True)
