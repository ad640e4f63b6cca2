"""The static half: parse the source, measure it, and hold every construct, name, attribute,
call and import against the profile. A violation raises :class:`EvalSyntaxRejected` naming
the rule that would allow it, at the source position of the first one."""

from __future__ import annotations

import ast

from ..errors import EvalSyntaxRejected
from ..rules.eval_vocab import SYNTAX_GROUPS
from .profile import ALWAYS_NAMES, BUILTIN_NAMES, Compiled, is_dunder
from .vocab import ALWAYS_DENIED_ATTRIBUTES, NEVER_CALLS, NEVER_IMPORTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

#: node name -> the group of ``eval-syntax`` that allows it
GROUP_OF = {node: group for group, nodes in SYNTAX_GROUPS.items() for node in nodes}

#: nodes that do not count for ``eval-max-depth`` (contexts and operators)
_FLAT = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)

#: a child continuing its parent's chain (``a + b + c``, ``x.strip().lower()``, ``t[0][1]``)
#: does not count for the depth either
_CHAINS = {ast.BinOp: "left", ast.Attribute: "value", ast.Call: "func", ast.Subscript: "value"}

#: the keys of a learned profile, in the order a rule file lists them
KEY_ORDER = ("eval-syntax", "eval-import", "eval-call", "eval-attribute", "eval-magic")


class Violation:
    __slots__ = ("col", "key", "line", "message", "value")

    def __init__(self, node: ast.AST | None, message: str, key: str = "", value: str = "") -> None:
        self.line: int | None = getattr(node, "lineno", None)
        self.col: int | None = getattr(node, "col_offset", None)
        self.message = message
        self.key = key
        self.value = value

    @property
    def rule(self) -> str:
        return f"{self.key}={self.value}" if self.key else ""


class Checked:
    """What the rewriter needs to know about a source that passed."""

    __slots__ = ("import_bound", "tree")

    def __init__(self, tree: ast.AST, import_bound: frozenset[str]) -> None:
        self.tree = tree
        self.import_bound = import_bound


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _bound_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Every name the source binds anywhere, and those bound by an import."""
    bound: set[str] = set()
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            name = node.asname or node.name.partition(".")[0]
            bound.add(name)
            imported.add(name)
        elif (isinstance(node, ast.ExceptHandler) and node.name) or (
            isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name
        ):
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound, imported


class Checker:
    def __init__(self, rules: Compiled, collect_all: bool = False) -> None:
        self.rules = rules
        self.collect_all = collect_all
        self.found: list[Violation] = []

    # -- entry ---------------------------------------------------------------------------

    def check(self, tree: ast.AST) -> Checked:
        bound, imported = _bound_names(tree)
        self.bound = bound
        self.imported = imported
        profile = self.rules.profile
        nodes = 0
        deepest = 0
        stack: list[tuple[ast.AST, int, ast.AST | None]] = [(tree, 0, None)]
        while stack:
            node, depth, parent = stack.pop()
            if isinstance(node, _FLAT):
                kind = type(node).__name__
                if not isinstance(node, ast.expr_context) and kind not in self.rules.nodes:
                    self._add(
                        parent, f"the operator {kind} is not allowed", "eval-syntax", GROUP_OF.get(kind, kind)
                    )
                continue
            nodes += 1
            chained = parent is not None and getattr(parent, _CHAINS.get(type(parent), "-"), None) is node
            if not chained:
                depth += 1
            deepest = max(deepest, depth)
            self._node(node, parent)
            stack.extend((child, depth, node) for child in reversed(list(ast.iter_child_nodes(node))))
        if nodes > profile.max_nodes:
            self.found.insert(
                0,
                Violation(
                    None,
                    f"the source has {nodes} syntax nodes, more than eval-max-nodes={profile.max_nodes}",
                    "eval-max-nodes",
                    str(nodes),
                ),
            )
        if deepest > profile.max_depth:
            self.found.insert(
                0,
                Violation(
                    None,
                    f"the source nests {deepest} levels deep, more than eval-max-depth={profile.max_depth}",
                    "eval-max-depth",
                    str(deepest),
                ),
            )
        return Checked(tree, frozenset(imported))

    # -- one node ------------------------------------------------------------------------

    def _add(self, node: ast.AST | None, message: str, key: str = "", value: str = "") -> None:
        self.found.append(Violation(node, message, key, value))

    def _never(self, node: ast.AST, what: str, why: str) -> None:
        self._add(node, f"{what} is never allowed ({why})")

    def _node(self, node: ast.AST, parent: ast.AST | None) -> None:
        kind = type(node).__name__
        rules = self.rules
        if isinstance(node, ast.Call):
            func = node.func
            if "Call" not in rules.nodes and not self._granted_callee(func):
                if isinstance(func, ast.Name):
                    if func.id in self.bound and func.id not in BUILTIN_NAMES:
                        self._add(node, f"calling '{func.id}' is not allowed", "eval-syntax", "func")
                    elif not is_dunder(func.id):
                        self._add(node, f"calling '{func.id}' is not allowed", "eval-call", func.id)
                elif not isinstance(func, ast.Attribute):
                    self._add(node, "this call is not allowed", "eval-syntax", "func")
        elif isinstance(node, ast.keyword):
            pass  # part of its call
        elif isinstance(node, ast.Attribute):
            self._attribute(node, node.attr)
        elif isinstance(node, ast.UnaryOp):
            pass  # allowed with its operator (`not` belongs to compare, `-` to arith)
        elif kind not in rules.nodes:
            group = GROUP_OF.get(kind, kind)
            self._add(node, f"{kind} is not allowed", "eval-syntax", group)
        if isinstance(node, ast.Name):
            self._name(node, node.id, load=isinstance(node.ctx, ast.Load))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._name(node, node.name, load=False)
        elif isinstance(node, ast.arg):
            self._name(node, node.arg, load=False)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self._name(node, name, load=False)
        elif (isinstance(node, ast.ExceptHandler) and node.name) or (
            isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name
        ):
            self._name(node, node.name, load=False)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self._name(node, node.rest, load=False)
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                self._attribute(node, attr)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self._import(node, alias.name)
                if alias.asname:
                    self._name(node, alias.asname, load=False)
        elif isinstance(node, ast.ImportFrom):
            self._import_from(node)

    def _granted_callee(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return self.rules.call_granted(func.id) or func.id in self.imported
        if isinstance(func, ast.Attribute):
            path = _dotted(func)
            if path is not None and self.rules.dotted_granted(path):
                return True
            root = func.value
            if isinstance(root, ast.Name) and root.id in self.imported:
                return True
            return self.rules.attribute_granted(func.attr)
        return False

    def _name(self, node: ast.AST, name: str, *, load: bool) -> None:
        rules = self.rules
        if is_dunder(name):
            if name in ALWAYS_DENIED_ATTRIBUTES or name in NEVER_CALLS:
                self._never(node, f"the name '{name}'", "it reaches the interpreter's internals")
            elif not rules.magic(name):
                self._add(node, f"the name '{name}' is not allowed", "eval-magic", name)
            return
        if not load or name in self.bound or name in ALWAYS_NAMES or name not in BUILTIN_NAMES:
            return
        if name in NEVER_CALLS:
            self._never(node, f"the builtin '{name}'", "it runs code or reads the caller's namespaces")
        elif not rules.calls(name):
            self._add(node, f"the builtin '{name}' is not allowed", "eval-call", name)

    def _attribute(self, node: ast.AST, attr: str) -> None:
        rules = self.rules
        if attr in ALWAYS_DENIED_ATTRIBUTES:
            self._never(
                node, f"the attribute '{attr}'", "it reaches frames, code, globals or the class graph"
            )
            return
        if is_dunder(attr):
            if not rules.magic(attr):
                self._add(node, f"the attribute '{attr}' is not allowed", "eval-magic", attr)
            return
        if rules.attributes(attr):
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            path = _dotted(node)
            if path is not None and rules.dotted_granted(path):
                return
            if isinstance(node.value, ast.Name) and node.value.id in self.imported:
                return  # a module's member: judged at run time (modules stay modules)
        self._add(node, f"the attribute '{attr}' is not allowed", "eval-attribute", attr)

    def _import(self, node: ast.AST, module: str) -> None:
        top = module.partition(".")[0]
        if top in NEVER_IMPORTS:
            self._never(node, f"importing '{module}'", "it reaches the interpreter's internals")
        elif not self.rules.import_granted(module):
            self._add(node, f"importing '{module}' is not allowed", "eval-import", module)

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._never(node, "a relative import", "evaluated code belongs to no package")
            return
        module = node.module or ""
        self._import(node, module)
        for alias in node.names:
            if alias.name == "*":
                self._never(node, "'from … import *'", "it binds names nobody reviewed")
            elif is_dunder(alias.name) or alias.name in ALWAYS_DENIED_ATTRIBUTES:
                self._attribute(node, alias.name)
            if alias.asname:
                self._name(node, alias.asname, load=False)


# -- entry points -------------------------------------------------------------------------


def parse(source: str, filename: str, mode: str) -> ast.AST:
    return ast.parse(source, filename, mode)


def check(rules: Compiled, tree: ast.AST, source: str, filename: str) -> Checked:
    """Hold ``tree`` (parsed from ``source``) against ``rules``; raise on any violation."""
    checker = Checker(rules)
    try:
        checked = checker.check(tree)
    except RecursionError:
        checker.found.insert(0, Violation(None, "the source is too deeply nested to be checked"))
        checked = None
    if checker.found or checked is None:
        raise rejection(rules, checker.found, source, filename)
    return checked


def rejection(rules: Compiled, found: list[Violation], source: str, filename: str) -> EvalSyntaxRejected:
    # Budgets first, then what no rule allows, then the rest in source order.
    found = sorted(found, key=lambda v: 0 if v.key.startswith("eval-max") else 1 if not v.key else 2)
    first = found[0]
    needed = tuple(dict.fromkeys(v.rule for v in found if v.rule and not v.key.startswith("eval-max")))
    if first.key.startswith("eval-max"):
        hint = f"Raise `{first.key}=` in the rule file, or shorten the source."
    elif first.key:
        hint = f"Add `{first.rule}` to the rule file to allow it."
    else:
        hint = "No eval-* rule allows it."
    where = f" at line {first.line}" if first.line is not None and source.count("\n") else ""
    others = [r for r in needed if r != first.rule]
    extra = f" Also needed: {', '.join(f'`{r}`' for r in others)}." if others else ""
    message = first.message
    if first.key.startswith("eval-max"):
        pass
    elif " (" in message and message.endswith(")"):
        head, _, why = message.partition(" (")
        message = f"{head} in evaluated code{where} ({why}"
    else:
        message = f"{message} in evaluated code{where}"
    message = f"{message[0].upper()}{message[1:]} (eval profile: {rules.label}).\n{hint}{extra}"
    text = None
    if first.line is not None:
        lines = source.splitlines()
        if 0 < first.line <= len(lines):
            text = lines[first.line - 1]
    offset = first.col + 1 if first.col is not None else None
    return EvalSyntaxRejected(message, (filename, first.line, offset, text), needed, rules.profile.name)


def violations(rules: Compiled, source: str, mode: str) -> Iterator[Violation]:
    tree = ast.parse(source, "<eval>", mode)
    checker = Checker(rules, collect_all=True)
    checker.check(tree)
    yield from checker.found


def needed_rules(source: str, mode: str = "eval") -> list[str]:
    """The ``eval-*`` lines ``source`` needs beyond an empty profile, one line per key, in
    rule-file order; a construct that belongs to an ``eval-syntax`` group is named by it."""
    from ..rules.evaluation import EvalProfile, Grants
    from .profile import compiled

    empty = Grants(frozenset(), frozenset())
    profile = EvalProfile(
        name="",
        syntax=empty,
        calls=empty,
        attributes=empty,
        imports=empty,
        magic=empty,
        namespace="adaptive",
        timeout=5.0,
        max_iterations=1_000_000,
        max_call_depth=20,
        max_depth=10**9,
        max_nodes=10**9,
        max_leaked_threads=4,
        max_alloc=10**18,
        rules=(),
    )
    by_key: dict[str, list[str]] = {key: [] for key in KEY_ORDER}
    for violation in violations(compiled(profile), source, mode):
        values = by_key.get(violation.key)
        if values is not None and violation.value not in values:
            values.append(violation.value)
    return [f"{key}={', '.join(sorted(values))}" for key, values in by_key.items() if values]
