"""The run-time half, put into the tree: budget ticks in loops, comprehensions and calls;
re-checks of the sticky interrupt in ``except`` and ``finally``; attribute reads through a
checker; size checks before the operators that can allocate without bound.

Helpers are named ``@tick``, ``@attr``…: no source can spell such a name, so evaluated code
can neither call nor shadow them. They live in the evaluation's globals (see ``runtime.py``).
"""

from __future__ import annotations

import ast

from .cost import SMALL_BITS
from .vocab import HELPER_PREFIX

#: operators whose result can be much larger than their operands, or that cost more than
#: linear time in them (big integers: see ``cost.py``)
GUARDED_OPS = {
    ast.Add: "add",
    ast.Mult: "mul",
    ast.Pow: "pow",
    ast.LShift: "lshift",
    ast.Mod: "mod",
    ast.FloorDiv: "floordiv",
}

#: an operand this simple cannot make ``+`` or ``%`` allocate beyond its own size
_NUMBER = (int, float, complex)
#: a literal integer below this (bits) makes ``//`` and ``%`` cost linear time at most
_SHORT_BITS = 64


def _constant_number(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, _NUMBER)


def _short_number(node: ast.expr | None) -> bool:
    """A float, complex or an integer literal of at most ``_SHORT_BITS`` bits."""
    if not _constant_number(node):
        return False
    value = node.value  # type: ignore[union-attr]
    return not isinstance(value, int) or value.bit_length() <= _SHORT_BITS


def _unguarded(name: str, left: ast.expr | None, right: ast.expr, limit: int) -> bool:
    """The operator ``name`` on these operands needs no check (``left`` is None for an
    augmented assignment, whose target is not known): both are number literals and the
    runtime check would let it pass without looking at the clock, or one side alone bounds
    the work."""
    if name == "add" and (_constant_number(left) or _constant_number(right)):
        return True  # a number on either side: no sequence grows, integers add in linear time
    if name == "floordiv" and (_short_number(left) or _short_number(right)):
        return True  # a short divisor, or a short dividend: linear at most
    if name == "mod" and _short_number(left):
        return True  # arithmetic, not formatting, and a short dividend
    if not (_constant_number(left) and _constant_number(right)):
        return False
    a = left.value  # type: ignore[union-attr]
    b = right.value  # type: ignore[attr-defined]
    if not (isinstance(a, int) and isinstance(b, int)):
        return True  # floats and complex numbers have a fixed size
    bits = max(a.bit_length(), 1)
    if name == "pow":
        return b < 0 or a in (-1, 0, 1) or bits * b <= min(SMALL_BITS, 8 * limit)
    if name == "lshift":
        return b < 0 or not a or bits + b <= min(SMALL_BITS, 8 * limit)
    return bits + b.bit_length() <= min(SMALL_BITS, 8 * limit)


def _is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    pending: list[ast.AST] = list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        pending.extend(ast.iter_child_nodes(current))
    return False


class Rewriter(ast.NodeTransformer):
    def __init__(self, import_bound: frozenset[str], max_alloc: int) -> None:
        self.import_bound = import_bound
        self.max_alloc = max_alloc
        self.used: set[str] = set()
        #: the code can turn integers into text or back (a call, an f-string, ``%``)
        self.converts = False

    def _helper(self, name: str) -> ast.Name:
        self.used.add(name)
        return ast.Name(HELPER_PREFIX + name, ast.Load())

    def _call(self, name: str, *args: ast.expr) -> ast.Call:
        return ast.Call(self._helper(name), list(args), [])

    def _statement(self, name: str, like: ast.AST) -> ast.Expr:
        return ast.copy_location(ast.Expr(self._call(name)), like)

    # -- budgets ---------------------------------------------------------------------------

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While) -> ast.AST:
        self.generic_visit(node)
        node.body.insert(0, self._statement("tick", node))
        return node

    visit_For = visit_AsyncFor = visit_While = _loop

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.ifs.insert(0, self._call("tick"))
        return node

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        body = node.body
        head: list[ast.stmt] = []
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            head = [body[0]]  # the docstring stays the docstring
            body = body[1:]
        if isinstance(node, ast.AsyncFunctionDef) or _is_generator(node):
            # suspended frames would hold a depth they do not use: ticked, not charged
            node.body = [*head, self._statement("tick", node), *(body or [ast.Pass()])]
        else:
            charged = ast.Try(
                body=[self._statement("enter", node), *body],
                handlers=[],
                orelse=[],
                finalbody=[self._statement("leave", node)],
            )
            node.body = [*head, ast.copy_location(charged, node)]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        return ast.copy_location(self._call("fn", node), node)

    # -- the interrupt cannot be swallowed -------------------------------------------------

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        node.body.insert(0, self._statement("check", node))
        return node

    def _try(self, node: ast.Try | ast.TryStar) -> ast.AST:
        self.generic_visit(node)
        if node.finalbody:
            node.finalbody.insert(0, self._statement("check", node))
        return node

    visit_Try = visit_TryStar = _try

    # -- attributes ------------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        module = isinstance(node.value, ast.Name) and node.value.id in self.import_bound
        value = self.visit(node.value)
        if isinstance(node.ctx, ast.Load):
            helper = "modattr" if module else "attr"
            return ast.copy_location(self._call(helper, value, ast.Constant(node.attr)), node)
        node.value = ast.copy_location(self._call("chkset", value), node.value)
        return node

    # -- allocation --------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = GUARDED_OPS.get(type(node.op))
        if name is None or _unguarded(name, node.left, node.right, self.max_alloc):
            return node
        if name == "mod":
            self.converts = True
        return ast.copy_location(self._call(name, node.left, node.right), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.converts = True
        self.generic_visit(node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.converts = True
        self.generic_visit(node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        value = self.visit(node.value)
        name = GUARDED_OPS.get(type(node.op))
        target = node.target
        if name == "mod":
            self.converts = True
        if name is None or _unguarded(name, None, value, self.max_alloc):
            node.value = value
            node.target = self.visit(target)
            return node
        op = ast.Constant(name)
        if isinstance(target, ast.Name):
            load = ast.Name(target.id, ast.Load())
            assign = ast.Assign([ast.Name(target.id, ast.Store())], self._call("iop", load, value, op))
            return ast.copy_location(assign, node)
        if isinstance(target, ast.Attribute):
            call = self._call("iattr", self.visit(target.value), ast.Constant(target.attr), value, op)
            return ast.copy_location(ast.Expr(call), node)
        assert isinstance(target, ast.Subscript)
        key = self.visit(target.slice)
        if isinstance(key, ast.Slice):
            none = ast.Constant(None)
            key = self._call("slice", key.lower or none, key.upper or none, key.step or none)
        call = self._call("isub", self.visit(target.value), key, value, op)
        return ast.copy_location(ast.Expr(call), node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        self.generic_visit(node)
        if node.format_spec is None:
            return node
        value = self._call("fmt", node.value, ast.Constant(node.conversion), node.format_spec)
        return ast.copy_location(ast.FormattedValue(value, -1, None), node)


def rewrite(
    tree: ast.AST, import_bound: frozenset[str], max_alloc: int
) -> tuple[ast.AST, frozenset[str], bool]:
    """The rewritten tree (``tree`` is changed in place), the helpers it uses, and whether it
    can convert between integers and text."""
    rewriter = Rewriter(import_bound, max_alloc)
    tree = rewriter.visit(tree)
    ast.fix_missing_locations(tree)
    return tree, frozenset(rewriter.used), rewriter.converts
