"""The import layers of the core package, read from its source with ``ast`` (nothing is imported).

CONVENTIONS.md: "Imports flow one way: cli → complete | api → remote → providers → guards,
evaluation, learning → rules → leaf modules — lazy imports included: a lazy import that points
up is a cycle too." This test pins how far the package is from that today, so it can only get
better:

- every import that points up (a module of a lower layer importing one of a higher layer) is
  listed below: at module level in ``MODULE_LEVEL_UPWARD``, inside a function (lazy) in
  ``LAZY_UPWARD``, each with the reason it exists; a new one fails the test;
- an entry whose import is gone fails the test too: delete the line, the list shrinks;
- the cycles between packages of the module-level graph are pinned in ``KNOWN_CYCLES``.

Imports under ``if TYPE_CHECKING:`` never run and are left out. Imports between modules of one
package (``rules.loader`` → ``rules.lexer``) are the package's own business; imports between two
packages of one layer are sideways, not upward (they still count for the cycles).

``python tests/test_import_layers.py`` prints the layers, the upward imports and the cycles.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "pysandboxes"
SOURCE = Path(__file__).resolve().parents[1] / "packages" / "pysandboxes" / "src" / PACKAGE

#: one small job each, and nothing above them needed
LEAVES = frozenset(
    {
        "__init__",  # the package itself: every import of a submodule runs it first
        "errors",  # the exception family
        "_log",  # logging without importing logging at start-up
        "_state",  # process-wide facts shared by both modes
        "_frames",  # tracebacks without the sandbox's frames
        "_lazy",  # regular expressions compiled on first use
        "_record",  # immutable records without dataclasses
        "_native",  # a few C calls without ctypes
        "_environ_block",  # the kernel's copy of the environment
    }
)

#: From the top. A unit is a subpackage or a top-level module of ``pysandboxes``.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("command line", frozenset({"cli", "__main__"})),
    ("adapters' helpers on the API", frozenset({"tools", "pytest_plugin"})),
    ("modes: complete | partial API", frozenset({"complete", "api", "_dotenv"})),
    ("partial mode's transport", frozenset({"remote"})),
    ("OS confinement", frozenset({"providers", "limits", "supervise"})),
    ("Python layer", frozenset({"guards", "evaluation", "learning"})),
    ("policy language", frozenset({"rules"})),
    ("leaf modules", LEAVES),
)

#: (importer, imported) → reason: module-level imports that point up (names without ``pysandboxes.``)
MODULE_LEVEL_UPWARD: dict[tuple[str, str], str] = {
    ("complete", "cli.cpython_args"): "complete mode takes the parsed CommandLine and its program kinds "
    "(COMMAND, MODULE, SCRIPT, STDIN, REPL) from the CLI's parser",
    ("providers.vmlink", "remote.channel"): "the VM link writes its frames with the channel's private "
    "_write_all (a loop over os.write) rather than a copy of its own",
}

#: (importer, imported) → reason: imports inside a function that point up
LAZY_UPWARD: dict[tuple[str, str], str] = {
    ("__init__", "api"): "the package's PEP 562 __getattr__ (its _LAZY table) loads sandbox, sandboxes, "
    "run, is_in_sandbox on first use, so python-sb never pays for partial mode",
    ("__init__", "evaluation"): "the package's PEP 562 __getattr__ loads guarded_eval on first use",
    ("__init__", "_dotenv"): "the package's PEP 562 __getattr__ loads load_dotenv on first use",
    ("errors", "remote.codec"): "errors.__getattr__ (PEP 562) re-exports RestrictedUnpicklingError, a "
    "pickle.UnpicklingError subclass defined in the codec, so pickle loads only when it is asked for",
    ("complete", "cli.python_sb"): "complete.resume() (the fresh interpreter after exec) calls back into the "
    "CLI's main() to run the program, imported before sys.path[0] goes",
    ("remote.child", "complete"): "the partial-mode child's _boot() borrows complete mode's _resolve "
    "(hostname pinning) and _apply_environment (the env= result into os.environ)",
    ("remote.host", "complete"): "the host's _launcher() pins the rules' hostnames with complete._resolve "
    "before it builds the namespace launcher",
    ("learning", "providers"): "the learner's finish() asks providers.default_provider() for the "
    "os-sandbox default written into a new rule file's template",
}

#: strongly connected components (more than one package) of the module-level package graph
KNOWN_CYCLES: set[frozenset[str]] = {
    frozenset({"providers", "remote"}),  # remote.host -> providers; providers.vmlink -> remote.channel
}


# ============================================================================================
# Reading the source
# ============================================================================================


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name without "pysandboxes." ("__init__" for the package)
    imported: str
    line: int
    lazy: bool  # inside a function
    type_only: bool  # under `if TYPE_CHECKING:`

    @property
    def pair(self) -> tuple[str, str]:
        return (self.importer, self.imported)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name, without ``pysandboxes.`` ("__init__" is the
    package itself, "rules" the rules package's ``__init__``)."""
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        found[".".join(parts)] = path
    return found


def unit(module: str) -> str:
    """The subpackage or top-level module that ``module`` belongs to."""
    return module.split(".")[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    node: ast.AST, lazy: bool = False, type_only: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, lazy, type_only
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _import_nodes(child, True, type_only)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield from _import_nodes(ast.Module(body=[statement], type_ignores=[]), lazy, True)
            for statement in child.orelse:
                yield from _import_nodes(ast.Module(body=[statement], type_ignores=[]), lazy, type_only)
        else:
            yield from _import_nodes(child, lazy, type_only)


def _facade_table(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The package's ``_LAZY`` table: names its ``__getattr__`` loads with ``import_module`` (PEP 562),
    imports that ``ast`` sees only as strings."""
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in statement.targets)
            and isinstance(statement.value, ast.Dict)
        ):
            for value in statement.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield value.value, value.lineno


@functools.cache
def imports() -> tuple[Import, ...]:
    """Every import of one package's module by a module of another package."""
    known = modules()
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if name == "__init__":
            package = ""
        elif path.name == "__init__.py":
            package = name
        else:
            package = name.rpartition(".")[0]
        targets: list[tuple[str, int, bool, bool]] = []
        for node, lazy, type_only in _import_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    targets.append((alias.name, node.lineno, lazy, type_only))
                continue
            if node.level:
                base_parts = [PACKAGE, *package.split(".")] if package else [PACKAGE]
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:  # `from . import complete` imports a module, `__version__` a name
                submodule = f"{base}.{alias.name}"
                is_module = submodule.removeprefix(f"{PACKAGE}.") in known
                targets.append((submodule if is_module else base, node.lineno, lazy, type_only))
        if name == "__init__":
            targets += [(f"{PACKAGE}.{module}", line, True, False) for module, line in _facade_table(tree)]
        for target, line, lazy, type_only in targets:
            if target != PACKAGE and not target.startswith(f"{PACKAGE}."):
                continue
            imported = target.removeprefix(PACKAGE).removeprefix(".") or "__init__"
            while imported not in known:  # `from pysandboxes.rules import Policy`: a name, not a module
                imported = imported.rpartition(".")[0] or "__init__"
            if unit(imported) != unit(name):
                found.append(Import(name, imported, line, lazy, type_only))
    return tuple(found)


def rank() -> dict[str, int]:
    """Unit → its layer's index (0 is the top)."""
    return {u: index for index, (_, units) in enumerate(LAYERS) for u in units}


def upward(lazy: bool) -> dict[tuple[str, str], list[int]]:
    """(importer, imported) → lines, for the imports that point up. A pair also imported at
    module level counts as module level only: its lazy imports find the module loaded."""
    ranks = rank()
    runtime = [i for i in imports() if not i.type_only]
    module_level = {i.pair for i in runtime if not i.lazy}
    found: dict[tuple[str, str], list[int]] = {}
    for i in runtime:
        if i.lazy != lazy or (lazy and i.pair in module_level):
            continue
        if ranks[unit(i.importer)] > ranks[unit(i.imported)]:
            found.setdefault(i.pair, []).append(i.line)
    return {pair: sorted(set(lines)) for pair, lines in found.items()}


def package_graph(*, lazy: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {u: set() for u in rank()}
    for i in imports():
        if not i.type_only and (lazy or not i.lazy):
            graph[unit(i.importer)].add(unit(i.imported))
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _show(pair: tuple[str, str], lines: list[int]) -> str:
    importer, imported = pair
    path = modules()[importer].relative_to(SOURCE.parent)
    return f"{importer} -> {imported} ({path}:{', '.join(map(str, lines))})"


# ============================================================================================
# Tests
# ============================================================================================


def test_every_package_and_top_level_module_has_a_layer() -> None:
    units = {unit(m) for m in modules()}
    placed = set(rank())
    assert sorted(units - placed) == [], "place these in LAYERS (test_import_layers.py)"
    assert sorted(placed - units) == [], "these are in LAYERS but no longer in the package"
    assert sum(len(units) for _, units in LAYERS) == len(placed), "a unit is in two layers"


def test_no_module_level_import_points_up_beyond_the_known_ones() -> None:
    new = [_show(p, lines) for p, lines in upward(lazy=False).items() if p not in MODULE_LEVEL_UPWARD]
    assert new == [], (
        "a module-level import points up the layers of CONVENTIONS.md (cli → complete | api → remote → "
        "providers → guards, evaluation, learning → rules → leaf modules): move the code it needs down"
    )


def test_every_lazy_import_that_points_up_is_known_with_its_reason() -> None:
    new = [_show(p, lines) for p, lines in upward(lazy=True).items() if p not in LAZY_UPWARD]
    assert new == [], (
        "an import inside a function points up the layers: a lazy upward import is a cycle too "
        "(CONVENTIONS.md); pass what the lower layer needs down instead"
    )


def test_every_known_upward_import_is_still_made() -> None:
    stale = sorted(set(MODULE_LEVEL_UPWARD) - set(upward(lazy=False)))
    stale += sorted(set(LAZY_UPWARD) - set(upward(lazy=True)))
    assert stale == [], "these imports no longer point up: delete their entries (the lists only shrink)"


def test_every_known_upward_import_has_a_one_line_reason() -> None:
    for pair, reason in {**MODULE_LEVEL_UPWARD, **LAZY_UPWARD}.items():
        assert reason.strip() and "\n" not in reason, pair


def test_the_cycles_between_packages_are_the_known_ones() -> None:
    found = cycles(package_graph(lazy=False))
    assert {tuple(sorted(c)) for c in found - KNOWN_CYCLES} == set(), "a new import cycle between packages"
    assert {tuple(sorted(c)) for c in KNOWN_CYCLES - found} == set(), "a cycle is gone: update KNOWN_CYCLES"


# ============================================================================================
# python tests/test_import_layers.py
# ============================================================================================


def summary() -> str:
    out = ["Layers, from the top (a unit may import its own layer and those below):"]
    for index, (title, units) in enumerate(LAYERS):
        out.append(f"  {index}  {title:32} {', '.join(sorted(units))}")
    for lazy, known in ((False, MODULE_LEVEL_UPWARD), (True, LAZY_UPWARD)):
        found = upward(lazy=lazy)
        out.append(f"\n{'Lazy' if lazy else 'Module-level'} imports that point up: {len(found)}")
        for pair, lines in sorted(found.items()):
            out.append(f"  {_show(pair, lines)}")
            out.append(f"      {known.get(pair, 'NEW: not in the allow-list')}")
        for pair in sorted(set(known) - set(found)):
            out.append(f"  STALE allow-list entry: {pair[0]} -> {pair[1]}")
    for lazy in (False, True):
        found = cycles(package_graph(lazy=lazy))
        title = "lazy imports included" if lazy else "module-level imports"
        out.append(f"\nCycles between packages ({title}): {len(found)}")
        out += [f"  {' <-> '.join(sorted(c))}" for c in sorted(found, key=sorted)]
    type_only = sorted(
        {i.pair for i in imports() if i.type_only and rank()[unit(i.importer)] > rank()[unit(i.imported)]}
    )
    out.append(f"\nType-only imports that point up (not checked): {len(type_only)}")
    out += [f"  {a} -> {b}" for a, b in type_only]
    return "\n".join(out)


if __name__ == "__main__":
    print(summary())
    sys.exit(0)
