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
CROSS_CUTTING = {"__init__", "errors", "settings", "migrations", "postgres", "serving", "registry"}


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


def imports_of(source: str, path: Path) -> list[Import]:
    """Every ``agentlake`` import in ``source`` (a module at ``path``), wherever it stands."""
    here = _dotted(path)
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
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
