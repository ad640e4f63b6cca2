"""``env=NAME=VALUE`` and ``unenv=PATTERN``: the environment the sandboxed program starts with.

Nothing is forwarded by default. An exact name beats any pattern; between patterns the one
with more fixed characters wins; two equally specific rules giving different values are an
error; ``unenv=`` removes a name whatever else says. A variable copied from an unset host
variable (``env=TOKEN=${TOKEN}``) is simply absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._lazy import LazyPattern
from .._record import Record
from .context import Context, Rule
from .substitution import SubstitutionError, Unset, substitute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NAME = LazyPattern(r"[A-Za-z_*][A-Za-z0-9_.*-]*")


class EnvRule(Record):
    __slots__ = ("name", "rule", "template")
    name: str  # exact name or a '*' pattern
    template: str  # value as written
    rule: Rule

    @property
    def is_pattern(self) -> bool:
        return "*" in self.name

    @property
    def fixed_chars(self) -> int:
        return len(self.name) - self.name.count("*")


class EnvPolicy(Record):
    __slots__ = ("rules", "sources", "unenv", "values")
    rules: tuple[EnvRule, ...]
    unenv: tuple[tuple[str, Rule], ...]
    values: Mapping[str, str]  # the resolved environment
    sources: Mapping[str, Rule]  # which rule gave each name


def compile_env(env_rules: list[Rule], unenv_rules: list[Rule], ctx: Context) -> EnvPolicy:
    parsed: list[EnvRule] = []
    for rule in env_rules:
        if "=" not in rule.value:
            ctx.problem(
                rule.origin,
                f"'{rule.text}': missing '=' after the variable name: write env=NAME=VALUE, "
                f"e.g. env=HOME=${{HOME}}",
            )
            continue
        name, template = rule.value.split("=", 1)
        name = name.strip()
        if not _NAME.fullmatch(name):
            ctx.problem(rule.origin, f"'{rule.text}': '{name}' is not a valid variable name or pattern")
            continue
        parsed.append(EnvRule(name, template, rule))
    removals: list[tuple[str, Rule]] = []
    for rule in unenv_rules:
        expanded = ctx.expand(rule, rule.value.strip())
        if expanded is None:
            continue
        pattern = expanded.strip()
        if not _NAME.fullmatch(pattern):
            ctx.problem(rule.origin, f"'{rule.text}': '{pattern}' is not a valid variable name or pattern")
            continue
        removals.append((pattern, rule))

    values: dict[str, str] = {}
    sources: dict[str, Rule] = {}
    exact: dict[str, list[EnvRule]] = {}
    patterns: list[EnvRule] = []
    for r in parsed:
        (patterns if r.is_pattern else exact.setdefault(r.name, [])).append(r)  # type: ignore[union-attr]

    for name, candidates in exact.items():
        _settle(name, candidates, values, sources, ctx)
    for host_name in ctx.environ:
        if host_name in exact:
            continue
        matching = [p for p in patterns if _fnmatch().fnmatchcase(host_name, p.name)]
        if not matching:
            continue
        best = max(p.fixed_chars for p in matching)
        _settle(host_name, [p for p in matching if p.fixed_chars == best], values, sources, ctx)

    for pattern, _rule in removals:
        for name in [n for n in values if _fnmatch().fnmatchcase(n, pattern)]:
            del values[name]
            del sources[name]
    return EnvPolicy(tuple(parsed), tuple(removals), MappingProxyType(values), MappingProxyType(sources))


def _settle(
    name: str, candidates: list[EnvRule], values: dict[str, str], sources: dict[str, Rule], ctx: Context
) -> None:
    """Resolve the value of ``name`` from equally specific rules."""
    results: dict[str | None, EnvRule] = {}
    for r in candidates:
        results.setdefault(_value(name, r, ctx), r)
    if len(results) > 1:
        first, *others = results.values()
        for other in others:
            ctx.problem(
                other.rule.origin,
                f"'{other.rule.text}' and {first.rule.describe()} give {name} different values "
                f"and are as specific: make one more specific, or add an exact env={name}=... rule",
            )
        return
    ((value, r),) = results.items()
    if value is not None:
        values[name] = value
        sources[name] = r.rule


def _value(name: str, r: EnvRule, ctx: Context) -> str | None:
    """The value ``r`` gives to ``name``; None leaves the variable undefined."""
    template = r.template
    if r.is_pattern:
        template = template.replace("${" + r.name + "}", "${" + name + "}")
        template = template.replace("${" + r.name + ":-", "${" + name + ":-")
    try:
        value = substitute(template, ctx.environ)
    except Unset:
        return None
    except SubstitutionError as exc:
        ctx.problem(r.rule.origin, f"in '{r.rule.text}': {exc}")
        return None
    if value == "" and "${" in template:
        return None  # copied from an empty host variable: leave it undefined
    return value


def _fnmatch() -> Any:
    import fnmatch

    return fnmatch
