"""The ``Domain`` extension point: what a domain tells the learning machinery, and the registry.

``learn`` owns lessons in general: a match over a task's key fields, an action, words for
models, evidence, confidence, history, measured effect. What those fields are and what an
action means belongs to a domain (each lives in its own package and registers through the
``agentlake.domains`` entry points; pyproject.toml lists the built-in ones). A domain supplies:

- its task key: the fields, in order (at most ``KEY_SLOTS``), that describe a task of it, the
  ones a lesson must agree on to be given (``hard_fields``), the one retrieval indexes lessons
  by (``partition_field``) and how a task reads in words (``describe_task``);
- its machine action (what a policy without a model applies): validating one, whether it is
  empty, its identity (what makes two actions the same lesson), merging two, their conflict,
  and describing one in words;
- optionally (``ReplaysJudged``), what its machine action would have done to judged items, so
  the gatekeeper can replay a lesson over recent judged events before it activates;
- its extractors: rule extractors (run by every built-in extractor) and inducers (run by
  ``induction``), and the words of a lesson about a tool failing in its tasks (the ops of a
  domain's task carry the label ``domain``).

Domains register through the ``agentlake.domains`` entry-point group, the door a third party
uses too; a lesson whose ``domain`` names no registered domain (``tools``, ``playbook``,
``general``) is a lesson about any task, with no machine action of a domain's. It does not own
lessons' storage, curation or retrieval, which call the domain through this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentlake.registry import Registry

if TYPE_CHECKING:
    from agentlake.learn.extractor import Extractor
    from agentlake.learn.model import TaskKey
    from agentlake.settings import Settings

# A lesson's identity is a hash over its match laid out in slots: the task kind, KEY_SLOTS
# fields of the domain's task key (in its declared order, empty when it declares fewer), the
# tool and the error signature. A fixed layout keeps every lesson's id stable whichever
# domains are installed.
KEY_SLOTS = 4


@runtime_checkable
class Domain(Protocol):
    """What a domain tells the learning machinery (see the module docstring)."""

    name: str
    key_fields: tuple[str, ...]
    hard_fields: tuple[str, ...]
    partition_field: str | None
    # Runs with a lesson before a negative measured effect retires it (None: the setting
    # learn_min_runs_for_retire): a domain whose runs are cheap to judge one by one sets fewer.
    min_runs_for_retire: int | None

    def describe_task(self, task: TaskKey) -> str:
        """The task in words, for semantic matching of lessons."""
        ...

    def validate_action(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """The action as it is stored (normalised JSON); raises ``ValueError`` when invalid."""
        ...

    def action_is_empty(self, action: Mapping[str, Any]) -> bool: ...

    def action_identity(self, action: Mapping[str, Any]) -> Any:
        """The parts of an action that make two lessons the same lesson (JSON-serialisable)."""
        ...

    def merge_actions(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
        """The action applying both."""
        ...

    def action_conflict(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
        """Why the two cannot both hold, or ``None``."""
        ...

    def describe_action(self, action: Mapping[str, Any]) -> str: ...

    def tool_advice(self, tool: str, signature: str, example: str) -> tuple[str, str] | None:
        """(trigger, action) of the lesson about a tool failing with ``signature`` in this
        domain's tasks, or ``None`` for the generic words."""
        ...

    def rules(self, settings: Settings) -> Sequence[Extractor]:
        """The domain's rule extractors (every built-in extractor runs them)."""
        ...

    def inducers(self, settings: Settings) -> Sequence[Extractor]:
        """The domain's inducers (run after every rule extractor by ``induction``)."""
        ...


@runtime_checkable
class ReplaysJudged(Protocol):
    """A domain that can say what its machine actions would have done to judged items: the
    gatekeeper's replay (``gate``). Optional: a domain without it has its lessons replayed only
    by the gatekeeper's model, as lessons in words."""

    def replay_applies(self, fields: Mapping[str, str], shape: str) -> bool:
        """Whether a lesson matching ``fields`` applies to a judged op of ``shape`` (its scope
        already agrees)."""
        ...

    def replay_refusal(
        self, action: Mapping[str, Any], item_id: int, values: Mapping[str, Any]
    ) -> str | None:
        """Why ``action`` would leave out the item (id and features), or ``None``."""
        ...


domains: Registry[Domain] = Registry("lesson domain", "agentlake.domains")


def register_domain(domain: Domain, *, replace: bool = False) -> Domain:
    """Register ``domain`` under its ``name`` (the door built-ins and third parties share; an
    ``agentlake.domains`` entry point naming the object registers it on first use)."""
    if len(domain.key_fields) > KEY_SLOTS:
        raise ValueError(
            f"domain {domain.name!r} declares {len(domain.key_fields)} key fields; at most {KEY_SLOTS}"
        )
    return domains.register(domain.name, domain, replace=replace)


def min_runs_for(domain_name: str | None, default: int) -> int:
    """Runs with a lesson of ``domain_name`` before a negative effect retires it."""
    domain = find_domain(domain_name)
    runs = getattr(domain, "min_runs_for_retire", None) if domain is not None else None
    return runs if isinstance(runs, int) and runs >= 1 else default


def find_domain(name: str | None) -> Domain | None:
    """The registered domain called ``name``, or ``None`` (a lesson about any task)."""
    if not name:
        return None
    try:
        return domains.find(name)
    except Exception:  # a broken plugin is reported where it is loaded; here it is no domain
        return None


def domain_names() -> list[str]:
    """Every registered domain's name (built-ins and installed entry points)."""
    return domains.names()


def all_domains() -> list[Domain]:
    """Every registered domain, by name."""
    return [domain for name in domain_names() if (domain := find_domain(name)) is not None]


def generic_identity(action: Mapping[str, Any]) -> Any:
    """The identity of an action of no registered domain: the action itself, canonical."""
    return json.loads(json.dumps(action, sort_keys=True, default=str))
