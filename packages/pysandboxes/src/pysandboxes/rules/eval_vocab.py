"""The vocabulary of the ``eval-*`` keys: syntax groups, attribute groups, defaults.

The rule language validates names against it; the eval guard gives them their effect.
"""

from __future__ import annotations

from types import MappingProxyType

#: Nodes every evaluated source may use: literals, names and containers.
CORE_NODES = frozenset(
    [
        "Module",
        "Expression",
        "Interactive",
        "Constant",
        "Name",
        "Load",
        "Store",
        "Del",
        "Tuple",
        "List",
        "Dict",
        "Set",
        "Expr",
        "Pass",
    ]
)

#: ``eval-syntax`` groups and the ``ast`` node names each one allows.
SYNTAX_GROUPS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        group: frozenset(nodes.split())
        for group, nodes in {
            "arith": "BinOp UnaryOp Add Sub Mult Div FloorDiv Mod Pow MatMult LShift RShift "
            "BitOr BitXor BitAnd UAdd USub Invert",
            "compare": "Compare Eq NotEq Lt LtE Gt GtE Is IsNot In NotIn BoolOp And Or Not",
            "conditional": "IfExp If",
            "loop": "For While Break Continue",
            "comprehension": "ListComp SetComp DictComp GeneratorExp comprehension",
            "assign": "Assign AugAssign AnnAssign NamedExpr Delete Starred",
            "func": "FunctionDef Lambda Return arguments arg keyword Call Global Nonlocal",
            "async": "AsyncFunctionDef Await AsyncFor AsyncWith",
            "class": "ClassDef",
            "exception": "Try TryStar ExceptHandler Raise Assert",
            "context": "With withitem",
            "import": "Import ImportFrom alias",
            "subscript": "Subscript Slice",
            "fstring": "JoinedStr FormattedValue",
            "tstring": "TemplateStr Interpolation",
            "yield": "Yield YieldFrom",
        }.items()
    }
)

#: ``eval-attribute`` groups: the methods of common value types. ``format`` and
#: ``format_map`` reach attributes through a format string, so no group grants them.
_STR = (
    "capitalize casefold center count encode endswith expandtabs find index isalnum isalpha "
    "isascii isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle "
    "isupper join ljust lower lstrip partition removeprefix removesuffix replace rfind rindex "
    "rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title translate "
    "upper zfill"
)
ATTRIBUTE_GROUPS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        group: frozenset(names.split())
        for group, names in {
            "str-methods": _STR,
            "list-methods": "append clear copy count extend index insert pop remove reverse sort",
            "dict-methods": "clear copy fromkeys get items keys pop popitem setdefault update values",
            "set-methods": "add clear copy difference difference_update discard intersection "
            "intersection_update isdisjoint issubset issuperset pop remove symmetric_difference "
            "symmetric_difference_update union update",
            "tuple-methods": "count index",
            "num-methods": "as_integer_ratio bit_count bit_length conjugate denominator from_bytes "
            "imag is_integer numerator real to_bytes hex fromhex",
            "bytes-methods": "decode hex fromhex " + _STR.replace(" encode", "").replace(" format", ""),
            "date-methods": "year month day hour minute second microsecond tzinfo weekday isoweekday "
            "isoformat isocalendar date time timetz replace strftime timestamp toordinal "
            "utcoffset tzname dst days seconds microseconds total_seconds",
        }.items()
    }
)

NEVER_BY_PATTERN = frozenset({"format", "format_map"})

EVAL_LIST_KEYS = ("eval-syntax", "eval-call", "eval-attribute", "eval-import", "eval-magic")
EVAL_NAMESPACES = ("adaptive", "closed", "caller")

#: scalar key -> (kind, default)
EVAL_SCALARS: MappingProxyType[str, tuple[str, object]] = MappingProxyType(
    {
        "eval-namespace": ("namespace", "adaptive"),
        "eval-timeout": ("duration", 5.0),
        "eval-max-iterations": ("int", 1_000_000),
        "eval-max-call-depth": ("int", 20),
        "eval-max-depth": ("int", 20),
        "eval-max-nodes": ("int", 5_000),
        "eval-max-leaked-threads": ("int", 4),
        "eval-max-alloc": ("bytes", 10_000_000),
    }
)

# Node names introduced after the oldest supported Python, accepted everywhere so that a
# profile stays portable.
_FUTURE_NODES = frozenset(
    {"TemplateStr", "Interpolation", "TypeAlias", "TypeVar", "ParamSpec", "TypeVarTuple"}
)


def ast_node_names() -> frozenset[str]:
    import ast

    names = {
        name
        for name in dir(ast)
        if isinstance(getattr(ast, name), type)
        and issubclass(getattr(ast, name), ast.AST)
        and name not in ("AST", "mod", "stmt", "expr", "expr_context", "boolop", "operator")
        and name not in ("unaryop", "cmpop", "excepthandler", "type_ignore", "pattern", "slice")
        and not name.startswith("_")
    }
    return frozenset(names) | _FUTURE_NODES
