"""The import rules that keep docs/architecture.md's picture true, one test per rule.

Every module under ``src/agentlake`` is parsed (``ast``: imports at the top, inside functions and
under ``TYPE_CHECKING`` alike, relative ones resolved); a rule names a package and what it must
not import, and its test fails listing each offending ``module:line``. The table of rules is the
one docs/architecture.md prints under "What each package may import".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentlake
from agentlake.workforce.tables import TABLES

SRC = Path(agentlake.__file__).parent
ARCHITECTURE_DOC = Path(__file__).parents[1] / "docs" / "architecture.md"
DOORS = ("cli", "gateway", "web", "graph")
CROSS_CUTTING = {
    "__init__",
    "errors",
    "settings",
    "migrations",
    "postgres",
    "serving",
    "registry",
    "checksum",
}


@dataclass(frozen=True)
class Rule:
    package: str
    forbidden: tuple[str, ...]
    why: str

    @property
    def name(self) -> str:
        return f"{self.package} imports no {', '.join(self.forbidden)}"


RULES = (
    Rule("lake", ("agents", "scenarios", "workforce", "learn", "observe", *DOORS), "data in, SQL, search: below everything"),
    Rule("llm", ("agents", "scenarios", "workforce", "lake", "learn", "observe", "embed", *DOORS), "a service the stages call"),
    Rule("embed", ("llm", "agents", "scenarios", "workforce", "learn", "observe", *DOORS), "a service the stages call; embeddings are not a model provider"),
    Rule("observe", ("agents", "scenarios", "workforce", "lake", "learn", *DOORS), "the witness serves any domain"),
    Rule("learn", ("agents", "scenarios", "workforce", *DOORS), "lessons out of any domain's ops"),
    Rule("workforce", ("agents", "scenarios", "observe", "llm", "embed", *DOORS), "the domain sits on the lake only"),
    Rule("agents", ("scenarios", *DOORS), "machinery under the main job and the doors"),
    Rule("scenarios", DOORS, "the main job is library code; doors call it"),
    Rule("questions", ("workforce", "agents", "scenarios", *DOORS), "questions over any user's tables; who asks them is above it"),
    Rule("http", ("lake", "llm", "embed", "observe", "learn", "workforce", "agents", "scenarios", *DOORS), "the HTTP edge sits under every door and client"),
)  # fmt: skip


@dataclass(frozen=True)
class Import:
    module: str  # path under src/agentlake, e.g. "agents/tools.py"
    line: int
    target: str  # dotted name, e.g. "agentlake.workforce.geo"

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def _dotted(path: Path) -> list[str]:
    """The package path of a module file: agents/tools.py -> ['agentlake', 'agents', 'tools']."""
    parts = ["agentlake", *path.relative_to(SRC).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _from_module(node: ast.ImportFrom, path: Path) -> str:
    """The dotted module a ``from ... import`` in the module at ``path`` reads, relative resolved."""
    if not node.level:
        return node.module or ""
    here = _dotted(path)
    base = here if path.name == "__init__.py" else here[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(source: str, path: Path) -> list[Import]:
    """Every ``agentlake`` import in ``source`` (a module at ``path``), wherever it stands."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path)
            # "from agentlake import demo" imports a module, not a name of agentlake/__init__.
            targets = [f"{module}.{a.name}" for a in node.names] if module == "agentlake" else [module]
        else:
            continue
        found += [
            Import(str(path.relative_to(SRC)), node.lineno, t) for t in targets if t.startswith("agentlake.")
        ]
    return found


def package_imports(package: str) -> list[Import]:
    root = SRC / package
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
    return [found for path in files for found in imports_of(path.read_text("utf-8"), path)]


def _package_of(target: str) -> str:
    return target.split(".")[1]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_import_rule(rule: Rule) -> None:
    broken = [str(i) for i in package_imports(rule.package) if _package_of(i.target) in rule.forbidden]
    assert broken == [], f"rule broken: {rule.name} ({rule.why})"


def _never_cell(package: str) -> str:
    """The "never imports" cell of ``package``'s row in docs/architecture.md's import table."""
    for line in ARCHITECTURE_DOC.read_text("utf-8").splitlines():
        if line.startswith(f"| `{package}/` |"):
            return line.split("|")[3]
    return ""


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.package)
def test_the_architecture_doc_states_each_rule(rule: Rule) -> None:
    cell = _never_cell(rule.package)
    stated = {name for name in rule.forbidden if f"`{name}`" in cell}
    if "any door" in cell:
        stated |= set(DOORS)
    assert stated == set(rule.forbidden), (
        f"docs/architecture.md's row for {rule.package}/ does not state: {rule.name}"
    )


# SQL naming a table, or a string that is a table's name: how code names a dataset.
_SQL_TABLE = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+({'|'.join(TABLES)})\b", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def table_names_in(source: str, module: str) -> list[str]:
    """``module:line`` for each string in ``source`` (docstrings aside) that names a workforce table."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if node.value in TABLES or _SQL_TABLE.search(node.value):
                found.append(f"{module}:{node.lineno} {node.value[:60]!r}")
    return found


def test_agents_name_no_workforce_table() -> None:
    named = [
        hit
        for path in sorted((SRC / "agents").rglob("*.py"))
        for hit in table_names_in(path.read_text("utf-8"), str(path.relative_to(SRC)))
    ]
    assert named == [], (
        f"agents name the domain's tables ({', '.join(TABLES)}); take them from agentlake.workforce"
    )


# The staffing domain's vocabulary: learn and observe are machinery for any domain and name
# none of it. Released migrations are exempt: they read columns older releases wrote.
STAFFING_WORDS = re.compile(
    r"\b(staff\w*|workforce|workers|worker_id|client_id|certifications?|no[_-]?shows?|placements?|"
    r"rescue\w*|welders?|forklift\w*|osha|miles|radius\w*|fill_rate|fill\.judged|scenario:fill)\b",
    re.IGNORECASE,
)
GENERIC_PACKAGES = ("learn", "observe")


def _migration_lines(tree: ast.AST) -> set[int]:
    """The lines of ``Migration(...)`` calls and of the constants they are given by name."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Migration"
    ]
    named = {arg.id for call in calls for arg in call.args if isinstance(arg, ast.Name)}
    spans = [(call.lineno, call.end_lineno or call.lineno) for call in calls]
    spans += [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in named for t in node.targets)
    ]
    return {line for start, end in spans for line in range(start, end + 1)}


def staffing_words_in(source: str, module: str) -> list[str]:
    """``module:line word`` for each staffing word in ``source`` (code, strings, comments),
    released migrations aside."""
    exempt = _migration_lines(ast.parse(source))
    return [
        f"{module}:{number} {match.group(0)}"
        for number, line in enumerate(source.splitlines(), start=1)
        if number not in exempt
        for match in STAFFING_WORDS.finditer(line)
    ]


@pytest.mark.parametrize("package", GENERIC_PACKAGES)
def test_the_machinery_names_no_staffing_term(package: str) -> None:
    named = [
        hit
        for path in sorted((SRC / package).rglob("*.py"))
        for hit in staffing_words_in(path.read_text("utf-8"), str(path.relative_to(SRC)))
    ]
    assert named == [], f"{package}/ speaks staffing; the domain's words belong in its own package"


def test_the_word_list_finds_a_staffing_term_but_not_in_a_released_migration() -> None:
    source = 'X = 1  # the staffer\nMigration("1", "ALTER TABLE t DROP COLUMN client_id")\n'
    assert staffing_words_in(source, "learn/x.py") == ["learn/x.py:1 staffer"]


def test_the_top_level_holds_only_cross_cutting_modules() -> None:
    modules = {path.stem for path in SRC.glob("*.py")}
    assert modules - CROSS_CUTTING == set(), (
        "a module at the top level belongs in the package whose job it does"
    )


# --- no import circle inside a package --------------------------------------------------------

ACYCLIC_PACKAGES = ("learn", "llm")


def _is_module(dotted: str) -> bool:
    found = SRC.parent.joinpath(*dotted.split("."))
    return found.with_suffix(".py").is_file() or (found / "__init__.py").is_file()


def _protocol_only_names(tree: ast.Module, names: set[str]) -> set[str]:
    """Those of ``names`` used at least once and only inside ``Protocol`` classes of ``tree``."""
    inside: dict[str, bool] = {}

    def visit(node: ast.AST, in_protocol: bool) -> None:
        if isinstance(node, ast.ClassDef):
            in_protocol = in_protocol or any(ast.unparse(base).endswith("Protocol") for base in node.bases)
        if isinstance(node, ast.Name) and node.id in names:
            inside[node.id] = inside.get(node.id, True) and in_protocol
        for child in ast.iter_child_nodes(node):
            visit(child, in_protocol)

    visit(tree, False)
    return {name for name, only in inside.items() if only}


def module_edges(source: str, path: Path) -> list[tuple[str, int, str]]:
    """``(module, line, imported module)`` for each ``agentlake`` module ``source`` imports: at
    the top, inside functions and under ``TYPE_CHECKING``; ``from package import module`` names
    the module. An import under ``TYPE_CHECKING`` whose names only ``Protocol`` classes use is
    left out (see ``test_no_import_circle_inside``)."""
    tree = ast.parse(source)
    type_only = {
        id(node)
        for statement in tree.body
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test)
        for node in ast.walk(statement)
        if isinstance(node, ast.ImportFrom)
    }
    bound = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if id(node) in type_only
        for alias in node.names  # type: ignore[attr-defined]
    }
    for_contracts = _protocol_only_names(tree, bound)
    here = ".".join(_dotted(path))
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path)
            names = [
                alias
                for alias in node.names
                if id(node) not in type_only or (alias.asname or alias.name) not in for_contracts
            ]
            targets = [f"{module}.{a.name}" if _is_module(f"{module}.{a.name}") else module for a in names]
        else:
            continue
        edges += [(here, node.lineno, target) for target in targets if target.startswith("agentlake.")]
    return edges


def import_circles(edges: list[tuple[str, int, str]], package: str) -> list[list[str]]:
    """The import circles among ``package``'s modules, each as ``module:line -> ...`` steps
    (one circle per strongly connected group of modules)."""
    prefix = f"agentlake.{package}"
    graph: dict[str, dict[str, int]] = {}
    for module, line, target in edges:
        if target == prefix or target.startswith(prefix + "."):
            graph.setdefault(module, {}).setdefault(target, line)
    circles = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        # A path back to ``start``, breadth first: the shortest circle through it.
        paths = {start: [start]}
        queue = [start]
        while queue:
            node = queue.pop(0)
            for target in sorted(graph.get(node, {})):
                if target == start:
                    steps = paths[node] + [start]
                    circles.append(
                        [f"{a}:{graph[a][b]} -> {b}" for a, b in zip(steps, steps[1:], strict=False)]
                    )
                    seen.update(steps)
                    queue = []
                    break
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    queue.append(target)
    return circles


def package_edges(package: str) -> list[tuple[str, int, str]]:
    return [
        edge
        for path in sorted((SRC / package).rglob("*.py"))
        for edge in module_edges(path.read_text("utf-8"), path)
    ]


@pytest.mark.parametrize("package", ACYCLIC_PACKAGES)
def test_no_import_circle_inside(package: str) -> None:
    """No module of ``learn`` or ``llm`` imports, however indirectly, a module that imports it.

    Every import is an edge: at the top, inside a function (a lazy import defers a circle to
    run time, it does not remove it: an engine module importing the provider that lazily
    imports the engine is a circle) and under ``TYPE_CHECKING`` (a function typed by a class
    calls what it names: curation taking a ``LessonStore`` that calls curation is a circle).
    One exception: a ``TYPE_CHECKING`` import whose names only ``Protocol`` classes use. A
    contract names the vocabulary it speaks and runs nothing: ``Domain.describe_task`` takes
    the ``TaskKey`` whose methods ask its domain.
    """
    circles = import_circles(package_edges(package), package)
    assert circles == [], f"import circles inside {package}/: lay the modules in layers"


# --- the readers themselves can see what the rules look for -----------------------------------


def test_the_import_reader_sees_imports_inside_functions() -> None:
    source = "def f():\n    from agentlake.agents.tools import Tool\n"
    assert [str(i) for i in imports_of(source, SRC / "lake" / "x.py")] == [
        "lake/x.py:2 imports agentlake.agents.tools"
    ]


def test_the_import_reader_resolves_relative_imports() -> None:
    source = "from ..agents import rules\n"
    assert [i.target for i in imports_of(source, SRC / "lake" / "x.py")] == ["agentlake.agents"]


def test_the_import_reader_sees_modules_imported_from_the_top_package() -> None:
    source = "from agentlake import demo\n"
    assert [i.target for i in imports_of(source, SRC / "cli" / "x.py")] == ["agentlake.demo"]


def test_the_circle_finder_finds_a_lazy_import_circle_and_a_typed_one() -> None:
    provider = "def engine():\n    from agentlake.llm.engine import Engine\n"
    engine = "from agentlake.llm.provider import Provider\n"
    curation = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentlake.learn.store import Store\n"
        "def apply(store: Store) -> None: ...\n"
    )
    store = "from agentlake.learn.curation import apply\n"
    edges = [
        *module_edges(provider, SRC / "llm" / "provider.py"),
        *module_edges(engine, SRC / "llm" / "engine.py"),
        *module_edges(curation, SRC / "learn" / "curation.py"),
        *module_edges(store, SRC / "learn" / "store.py"),
    ]
    assert import_circles(edges, "llm") == [
        [
            "agentlake.llm.engine:1 -> agentlake.llm.provider",
            "agentlake.llm.provider:2 -> agentlake.llm.engine",
        ]
    ]
    assert import_circles(edges, "learn") == [
        [
            "agentlake.learn.curation:3 -> agentlake.learn.store",
            "agentlake.learn.store:1 -> agentlake.learn.curation",
        ]
    ]


def test_the_circle_finder_lets_a_protocol_name_the_types_it_speaks() -> None:
    domain = (
        "from typing import TYPE_CHECKING, Protocol\nif TYPE_CHECKING:\n    from agentlake.learn.model import Task\n"
        "class Domain(Protocol):\n    def describe(self, task: Task) -> str: ...\n"
    )
    model = "from agentlake.learn.domain import find\n"
    edges = [
        *module_edges(domain, SRC / "learn" / "domain.py"),
        *module_edges(model, SRC / "learn" / "model.py"),
    ]
    assert import_circles(edges, "learn") == []


def test_the_table_reader_finds_sql_over_a_table_but_not_prose() -> None:
    source = '"""Reads workers."""\nQ = "SELECT 1 FROM placements p"\nD = "how many workers"\n'
    assert table_names_in(source, "agents/x.py") == ["agents/x.py:2 'SELECT 1 FROM placements p'"]


def test_tests_assert_one_fact_at_a_time() -> None:
    """``assert a and b`` hides which part failed; pytest shows each of ``assert a`` / ``assert b``."""
    tests = Path(__file__).parent
    joined = [
        f"{path.relative_to(tests)}:{node.lineno}"
        for path in sorted(tests.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Assert)
        and isinstance(node.test, ast.BoolOp)
        and isinstance(node.test.op, ast.And)
    ]
    assert joined == [], "split each 'assert a and b' into one assert per fact"
