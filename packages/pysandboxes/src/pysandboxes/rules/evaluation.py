"""``eval-*`` keys: the sub-language that code given to eval/exec/compile may use.

``eval-KEY=`` lines build the default profile; ``eval-KEY:NAME=`` lines build the independent
profile NAME, reachable through ``guarded_eval(profile=NAME)``.
"""

from __future__ import annotations

from types import MappingProxyType

from .._lazy import LazyPattern
from .._record import Record
from .context import Context, Rule
from .eval_vocab import (
    ATTRIBUTE_GROUPS,
    CORE_NODES,
    EVAL_LIST_KEYS,
    EVAL_NAMESPACES,
    EVAL_SCALARS,
    NEVER_BY_PATTERN,
    SYNTAX_GROUPS,
    ast_node_names,
)
from .substitution import split_outside_references
from .values import closest, parse_decimal_size, parse_duration, parse_int

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar


_NAME_GLOB = LazyPattern(r"[A-Za-z_*][A-Za-z0-9_*]*")
_DOTTED_GLOB = LazyPattern(r"[A-Za-z_*][A-Za-z0-9_*]*(?:\.[A-Za-z_*][A-Za-z0-9_*]*)*")
_PROFILE = LazyPattern(r"[A-Za-z0-9_-]+")


class Grants(Record):
    """The names one ``eval-*`` list key allows and denies in a profile."""

    __slots__ = ("allow", "deny")
    _defaults: ClassVar[dict[str, Any]] = {"allow": frozenset(), "deny": frozenset()}
    allow: frozenset[str]
    deny: frozenset[str]


class EvalProfile(Record):
    __slots__ = (
        "attributes",
        "calls",
        "imports",
        "magic",
        "max_alloc",
        "max_call_depth",
        "max_depth",
        "max_iterations",
        "max_leaked_threads",
        "max_nodes",
        "name",
        "namespace",
        "rules",
        "syntax",
        "timeout",
    )
    name: str  # "" for the default profile
    syntax: Grants  # ast node names (groups expanded; core nodes always allowed)
    calls: Grants
    attributes: Grants
    imports: Grants
    magic: Grants
    namespace: str
    timeout: float
    max_iterations: int
    max_call_depth: int
    max_depth: int
    max_nodes: int
    max_leaked_threads: int
    max_alloc: int
    rules: tuple[Rule, ...]

    def allows_node(self, node: str) -> bool:
        return node not in self.syntax.deny and (node in CORE_NODES or node in self.syntax.allow)


def split_eval_key(key: str) -> tuple[str, str]:
    base, _, profile = key.partition(":")
    return base, profile


def compile_eval(rules: list[Rule], ctx: Context) -> MappingProxyType[str, EvalProfile]:
    by_profile: dict[str, list[Rule]] = {}
    for rule in rules:
        _base, profile = split_eval_key(rule.key)
        if ":" in rule.key and not _PROFILE.fullmatch(profile):
            ctx.problem(rule.origin, f"'{rule.key}': a profile name uses letters, digits, '-' and '_'")
            continue
        by_profile.setdefault(profile, []).append(rule)
    return MappingProxyType({name: _profile(name, rs, ctx) for name, rs in by_profile.items()})


def _profile(name: str, rules: list[Rule], ctx: Context) -> EvalProfile:
    allow: dict[str, set[str]] = {k: set() for k in EVAL_LIST_KEYS}
    deny: dict[str, set[str]] = {k: set() for k in EVAL_LIST_KEYS}
    scalars: dict[str, object] = {k: default for k, (_kind, default) in EVAL_SCALARS.items()}
    scalar_origin: dict[str, Rule] = {}
    for rule in rules:
        base, _ = split_eval_key(rule.key)
        if base in EVAL_SCALARS:
            value = ctx.expand(rule, rule.value.strip())
            if value is None:
                continue
            previous = scalar_origin.get(base)
            if previous is not None:
                overrides = previous.origin.is_file and not rule.origin.is_file
                if not overrides:
                    if previous.value.strip() != rule.value.strip():
                        ctx.problem(
                            rule.origin,
                            f"'{rule.text}': {base} is already set to another value in this "
                            f"profile at {previous.origin}; it takes one value",
                        )
                    continue
            scalar_origin[base] = rule
            parsed = _scalar(base, value, rule, ctx)
            if parsed is not None:
                scalars[base] = parsed
            continue
        target = allow[base]
        value = rule.value.strip()
        if value.upper().startswith("DENY:"):
            target = deny[base]
            value = value[5:]
        # Split first, then substitute: a variable fills one name, it cannot add names.
        for written in split_outside_references(value, ","):
            item = ctx.expand(rule, written.strip())
            if item is None:
                continue
            item = item.strip()
            if not item:
                ctx.problem(rule.origin, f"'{rule.text}': empty name in the list")
                continue
            names = _items(base, item, rule, ctx)
            target.update(names)
    return EvalProfile(
        name=name,
        syntax=Grants(frozenset(allow["eval-syntax"]), frozenset(deny["eval-syntax"])),
        calls=Grants(frozenset(allow["eval-call"]), frozenset(deny["eval-call"])),
        attributes=Grants(frozenset(allow["eval-attribute"]), frozenset(deny["eval-attribute"])),
        imports=Grants(frozenset(allow["eval-import"]), frozenset(deny["eval-import"])),
        magic=Grants(frozenset(allow["eval-magic"]), frozenset(deny["eval-magic"])),
        namespace=str(scalars["eval-namespace"]),
        timeout=float(scalars["eval-timeout"]),  # type: ignore[arg-type]
        max_iterations=int(scalars["eval-max-iterations"]),  # type: ignore[call-overload]
        max_call_depth=int(scalars["eval-max-call-depth"]),  # type: ignore[call-overload]
        max_depth=int(scalars["eval-max-depth"]),  # type: ignore[call-overload]
        max_nodes=int(scalars["eval-max-nodes"]),  # type: ignore[call-overload]
        max_leaked_threads=int(scalars["eval-max-leaked-threads"]),  # type: ignore[call-overload]
        max_alloc=int(scalars["eval-max-alloc"]),  # type: ignore[call-overload]
        rules=tuple(rules),
    )


def _scalar(base: str, value: str, rule: Rule, ctx: Context) -> object | None:
    kind = EVAL_SCALARS[base][0]
    try:
        if kind == "namespace":
            if value not in EVAL_NAMESPACES:
                raise ValueError(
                    f"invalid value '{value}' for {base}: use one of {', '.join(EVAL_NAMESPACES)}"
                )
            return value
        if kind == "duration":
            return parse_duration(value, base)
        if kind == "bytes":
            return parse_decimal_size(value, base)
        return parse_int(value, base, minimum=0 if base == "eval-max-leaked-threads" else 1)
    except ValueError as exc:
        ctx.problem(rule.origin, str(exc))
        return None


def _items(base: str, item: str, rule: Rule, ctx: Context) -> set[str]:
    if base == "eval-syntax":
        if item in SYNTAX_GROUPS:
            return set(SYNTAX_GROUPS[item])
        nodes = ast_node_names()
        if item in nodes:
            return {item}
        ctx.problem(
            rule.origin,
            f"'{rule.text}': unknown syntax '{item}'{closest(item, [*SYNTAX_GROUPS, *nodes])}; "
            f"groups: {', '.join(SYNTAX_GROUPS)}, or an ast node name such as ListComp",
        )
        return set()
    if base == "eval-attribute" and item in ATTRIBUTE_GROUPS:
        return set(ATTRIBUTE_GROUPS[item])
    if base == "eval-attribute" and item in NEVER_BY_PATTERN:
        ctx.note(
            rule.origin,
            f"'{rule.text}' grants '{item}', which reaches attributes through a format string",
        )
    if base == "eval-attribute" and "-" in item:
        ctx.problem(
            rule.origin,
            f"'{rule.text}': unknown attribute group '{item}'{closest(item, ATTRIBUTE_GROUPS)}",
        )
        return set()
    pattern = _DOTTED_GLOB if base in ("eval-call", "eval-import") else _NAME_GLOB
    if not pattern.fullmatch(item):
        ctx.problem(rule.origin, f"'{rule.text}': '{item}' is not a valid name or * pattern")
        return set()
    if base == "eval-magic" and "*" not in item and not (item.startswith("__") and item.endswith("__")):
        ctx.problem(
            rule.origin, f"'{rule.text}': eval-magic grants dunder names such as __len__, not '{item}'"
        )
        return set()
    return {item}
