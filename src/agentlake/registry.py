"""One shape for every extension point: a named registry, with entry points for third parties.

Owns ``Registry``, which every extension point uses: LLM providers (``agentlake.providers``,
by model prefix), embedders (``agentlake.embedders``, by scheme), policies
(``agentlake.policies``), lesson extractors (``agentlake.extractors``) and graph nodes
(``agentlake.graph_nodes``). ``register(name, entry)`` is the one door: built-ins call it
when their module is imported, third parties call it or declare an entry point, and a name is
registered once unless ``replace=True`` (so two plugins cannot silently shadow each other).

``get(name)`` looks in what is registered, then imports the built-in module that provides the
name (built-ins load on first use, so ``rules`` never imports the LLM layer), then loads the
installed distributions' entry point of that name, as the ``llm`` CLI finds its plugins::

    [project.entry-points."agentlake.embedders"]
    myembed = "mypackage.embed:factory"

A plugin that fails to load (its module does not import, or its object does not fit the
contract) is named in a warning, once, and left out of ``entries()``: the other entries keep
working. Asked for by name, it raises ``RunError`` naming it, never passes for an unknown name.

What an entry is (a factory, a class) and its contract belong to each extension point's own
module (``llm.provider``, ``embed.embedder``, ``agents.policy``, ``learn.extractor``,
``graph.node``), not here; ``docs/plugins.md`` documents them for third parties.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from agentlake.errors import RunError, UserError

T = TypeVar("T")
log = logging.getLogger(__name__)


class Registry(Generic[T]):
    """Named entries of one extension point (see the module docstring).

    ``kind`` names the point in errors ("embedder scheme"); ``group`` is its entry-point group;
    ``builtins`` maps each built-in name to the module that registers it on import;
    ``check(name, entry)`` raises ``UserError`` for an entry that does not fit the contract;
    ``on_change()`` runs after every registration (e.g. to drop cached instances).
    """

    def __init__(
        self,
        kind: str,
        group: str,
        *,
        builtins: Mapping[str, str] | None = None,
        check: Callable[[str, T], None] | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins or {})
        self._check = check
        self._on_change = on_change
        self._entries: dict[str, T] = {}
        self._lock = threading.RLock()
        self._points: dict[str, EntryPoint] | None = None
        # Plugins that failed to load, with why: warned about once, then refused by name.
        self._broken: dict[str, str] = {}

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Make ``name`` resolve to ``entry``; returns ``entry`` (usable in a decorator).

        Raises ``UserError`` for a name that is empty or holds ``:`` or spaces, for an entry
        the extension point's ``check`` refuses, and for a name already registered unless
        ``replace``.
        """
        if not isinstance(name, str) or not name or ":" in name or name != name.strip() or " " in name:
            raise UserError(f"invalid {self.kind} name {name!r}: use a plain word such as 'local'")
        if self._check is not None:
            self._check(name, entry)
        with self._lock:
            if name in self._entries and not replace:
                raise UserError(
                    f"{self.kind} {name!r} is already registered; pass replace=True to override it"
                )
            self._entries[name] = entry
        if self._on_change is not None:
            self._on_change()
        return entry

    def find(self, name: str) -> T | None:
        """The entry for ``name`` (loading its built-in module or entry point), or ``None``."""
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        module = self._builtins.get(name)
        if module is not None:
            importlib.import_module(module)  # registers itself, through register()
            entry = self._entries.get(name)
            if entry is not None:
                return entry
        point = self._entry_points().get(name)
        if point is None:
            return None
        if name in self._broken:
            raise RunError(self._broken[name])
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin must not pass for an unknown name
            raise self._broken_plugin(name, point, exc) from exc
        with self._lock:
            if name not in self._entries:
                try:
                    self.register(name, loaded)
                except UserError as exc:  # loaded, but not what this extension point takes
                    raise self._broken_plugin(name, point, exc) from None
            return self._entries[name]

    def _broken_plugin(self, name: str, point: EntryPoint, exc: Exception) -> RunError:
        """The error for a plugin that failed to load, warned about the first time."""
        dist = getattr(getattr(point, "dist", None), "name", None)
        where = f"{point.value} in {dist}" if dist else point.value
        message = f"{self.kind} plugin {name!r} ({where}) failed to load: {type(exc).__name__}: {exc}"
        with self._lock:
            first = name not in self._broken
            self._broken[name] = message
        if first:
            log.warning("%s; the other %s entries keep working", message, self.group)
        return RunError(message)

    def get(self, name: str) -> T:
        """The entry for ``name``; ``UserError`` naming the known ones when there is none."""
        entry = self.find(name)
        if entry is None:
            raise UserError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or 'none'}")
        return entry

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def names(self) -> list[str]:
        """Every name that resolves: registered, built-in and installed entry points, sorted."""
        with self._lock:
            registered = set(self._entries)
        return sorted(registered | set(self._builtins) | set(self._entry_points()))

    def entries(self) -> dict[str, T]:
        """Every entry by name, loading the built-ins and entry points not loaded yet. A plugin
        that fails to load is left out (with a warning naming it, see the module docstring)."""
        out: dict[str, T] = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except RunError:
                if name not in self._broken:
                    raise
        return out

    def _entry_points(self) -> dict[str, EntryPoint]:
        # Scanning the installed distributions costs milliseconds: once per process, and only
        # when a name is not registered or built in.
        if self._points is None:
            self._points = {point.name: point for point in entry_points(group=self.group)}
        return self._points
