"""The lesson-extractor extension point: the ``Extractor`` contract and its registry.

An extractor reads observed ops and proposes deltas; it never writes lessons itself (code
curates: ``LessonStore.propose``). Built-ins (``heuristic``, ``llm``) register through
:func:`register_extractor`, the same door a third party uses; ``settings.learn_extractor``
picks one. This module owns only the contract and the registry.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentlake.errors import UserError
from agentlake.learn.model import DEFAULT_PROJECT, Delta

if TYPE_CHECKING:
    from agentlake.observe.model import ObservedOp
    from agentlake.settings import Settings


@dataclass
class ExtractContext:
    """What an extractor knows besides the ops: the project its lessons belong to."""

    project_id: str = DEFAULT_PROJECT
    notes: dict[str, Any] = field(default_factory=dict)  # diagnostics an extractor may fill in


@runtime_checkable
class Extractor(Protocol):
    """Turns ops into proposed deltas. Must not raise on odd ops: skip what it cannot read."""

    name: str

    def extract(self, ops: Sequence[ObservedOp], context: ExtractContext) -> list[Delta]: ...


ExtractorFactory = Callable[["Settings"], Extractor]

_registry: dict[str, ExtractorFactory] = {}
_lock = threading.Lock()
_BUILTINS = {"heuristic": "agentlake.learn.heuristic", "llm": "agentlake.learn.llm_extractor"}


def register_extractor(name: str, factory: ExtractorFactory, *, replace: bool = False) -> None:
    """Make ``name`` resolve to ``factory(settings)``; ``UserError`` if taken (unless ``replace``)."""
    with _lock:
        if name in _registry and not replace:
            raise UserError(f"a lesson extractor named {name!r} is already registered")
        _registry[name] = factory


def extractor_names() -> list[str]:
    """Registered names, built-ins included."""
    return sorted(set(_registry) | set(_BUILTINS))


def get_extractor(name: str | None = None, settings: Settings | None = None) -> Extractor:
    """The extractor ``name`` (default ``settings.learn_extractor``), built for ``settings``.

    Raises ``UserError`` for an unknown name, or when the extractor's configuration is
    missing (e.g. ``llm`` without ``learn_model``).
    """
    from agentlake.settings import load_settings

    settings = settings or load_settings()
    name = name or settings.learn_extractor
    if name not in _registry and name in _BUILTINS:
        importlib.import_module(_BUILTINS[name])  # registers itself
    factory = _registry.get(name)
    if factory is None:
        raise UserError(f"unknown lesson extractor {name!r}; known: {', '.join(extractor_names())}")
    return factory(settings)
