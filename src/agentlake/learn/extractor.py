"""The lesson-extractor extension point: the ``Extractor`` contract and its registry.

An extractor reads observed ops and proposes deltas; it never writes lessons itself (code
curates: ``LessonStore.propose``). Built-ins (``heuristic``, ``induction``, ``llm``) register through
:func:`register_extractor`, the same door a third party uses; ``settings.learn_extractor``
picks one (each runs every registered domain's own extractors: ``domain``). This module owns
only the contract and the registry.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentlake.learn.model import DEFAULT_PROJECT, Delta, Lesson
from agentlake.registry import Registry
from agentlake.settings import load_settings

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.learn.evidence import EvidenceItem
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings

    # What an extractor reads: an op the witness recorded (a domain's extractors name it so).
    Op = ObservedOp


@dataclass(frozen=True)
class PoolCheck:
    """What a filter leaves of a scope's candidate pool (the domain counts; learn never reads
    a domain's tables): candidates before and after, and the orders left with none."""

    before: int
    after: int
    emptied: tuple[str, ...] = ()


# (scope, the domain's machine action) -> what it leaves, or None when the domain cannot tell.
PoolChecker = Callable[[str, Any], "PoolCheck | None"]


class LessonReader(Protocol):
    """Read access to the lesson store for extractors (they propose deltas, never write)."""

    def list(self, **filters: Any) -> builtins.list[Lesson]: ...

    def evidence(
        self, scope: str, *, project_id: str | None = None
    ) -> tuple[dict[str, dict[str, str]], builtins.list[EvidenceItem]]: ...


@dataclass
class ExtractContext:
    """What an extractor knows besides the ops: the project its lessons belong to, the store
    as it stands (read only: lessons and the judged evidence kept so far), from the domain a
    check of what a filter would leave of a scope's candidates, and a read handle on the data
    lessons are about (the lake: an extractor checks what it learns by running it; ``None``:
    it keeps only what needs no check)."""

    project_id: str = DEFAULT_PROJECT
    notes: dict[str, Any] = field(default_factory=dict)  # diagnostics an extractor may fill in
    store: LessonReader | None = None
    pool_check: PoolChecker | None = None
    lake: Lake | None = None


@runtime_checkable
class Extractor(Protocol):
    """Turns ops into proposed deltas. Must not raise on odd ops: skip what it cannot read."""

    name: str

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> builtins.list[Delta]: ...


ExtractorFactory = Callable[["Settings"], Extractor]

# The built-ins and the modules that register them, imported on first use.
extractors: Registry[ExtractorFactory] = Registry(
    "lesson extractor",
    "agentlake.extractors",
    builtins={
        "heuristic": "agentlake.learn.heuristic",
        "induction": "agentlake.learn.heuristic",
        "llm": "agentlake.learn.llm_extractor",
    },
)


def register_extractor(name: str, factory: ExtractorFactory, *, replace: bool = False) -> None:
    """Make ``name`` resolve to ``factory(settings)``; the one door for the built-ins and third
    parties (who may also declare an ``agentlake.extractors`` entry point). ``UserError`` if
    taken (unless ``replace``)."""
    extractors.register(name, factory, replace=replace)


def extractor_names() -> builtins.list[str]:
    """Registered names, built-ins included."""
    return extractors.names()


def get_extractor(name: str | None = None, settings: Settings | None = None) -> Extractor:
    """The extractor ``name`` (default ``settings.learn_extractor``), built for ``settings``.

    Raises ``UserError`` for an unknown name, or when the extractor's configuration is
    missing (e.g. ``llm`` without ``learn_model``).
    """
    settings = settings or load_settings()
    name = name or settings.learn_extractor
    return extractors.get(name)(settings)
