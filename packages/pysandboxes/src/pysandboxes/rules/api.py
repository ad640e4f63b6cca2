"""``python-api=ALLOW:…`` / ``python-api=DENY:…``: the sensitive functions a program may call.

Resolved by specificity, not by order: a function rule beats its category, a category rule
beats ``*``, and at equal specificity DENY wins. Everything in the registry is refused when no
rule speaks for it.
"""

from __future__ import annotations

from .._record import Record
from .api_registry import CATEGORIES, CATEGORY_OF
from .context import Context, Rule
from .substitution import split_outside_references
from .values import closest


class ApiRule(Record):
    __slots__ = ("allow", "rule", "target")
    allow: bool
    target: str  # "*", a category or a function
    rule: Rule


class ApiDecision(Record):
    __slots__ = ("allowed", "category", "function", "rule")
    allowed: bool
    function: str
    category: str
    rule: ApiRule | None  # None: denied by default


class ApiPolicy(Record):
    __slots__ = ("rules",)
    rules: tuple[ApiRule, ...]

    def decide(self, function: str) -> ApiDecision:
        category = CATEGORY_OF.get(function, "")
        for level in (function, category, "*"):
            if not level:
                continue
            hits = [r for r in self.rules if r.target == level]
            if hits:
                deny = next((r for r in hits if not r.allow), None)
                chosen = deny or hits[0]
                return ApiDecision(chosen.allow, function, category, chosen)
        return ApiDecision(False, function, category, None)


def compile_api(rules: list[Rule], ctx: Context) -> ApiPolicy:
    compiled: list[ApiRule] = []
    for rule in rules:
        action, sep, targets = rule.value.partition(":")
        action = action.strip().upper()
        if not sep or action not in ("ALLOW", "DENY"):
            ctx.problem(
                rule.origin,
                f"'{rule.text}': expected python-api=ALLOW:TARGET or python-api=DENY:TARGET, where "
                "TARGET is a category (e.g. threads), a function (e.g. os.system) or *",
            )
            continue
        allow = action == "ALLOW"
        # Split first, then substitute: a variable fills one target, it cannot add targets.
        for written in split_outside_references(targets, ","):
            target = ctx.expand(rule, written.strip())
            if target is None:
                continue
            target = target.strip()
            if not target:
                ctx.problem(rule.origin, f"'{rule.text}': empty target in the list")
            elif ":" in target:
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}': one action per line: write the ALLOW and DENY targets on separate lines",
                )
            elif target == "*" or target in CATEGORIES or target in CATEGORY_OF:
                compiled.append(ApiRule(allow, target, rule))
            elif "." in target:
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}': '{target}' is not a registered sensitive function"
                    f"{closest(target, CATEGORY_OF)}; see `pysandboxes explain --api` for the list",
                )
            else:
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}': unknown category '{target}'{closest(target, CATEGORIES)}; "
                    f"categories: {', '.join(CATEGORIES)}",
                )
    return ApiPolicy(tuple(compiled))
