"""The eval guard's entry points: parse, check, rewrite and compile a source once per
(source, mode, filename, profile) (bounded LRU), then run the code in the calling thread
under a fresh budget list. Fails closed: a checker that cannot decide refuses."""

from __future__ import annotations

import _thread
import ast
import os
import sys
import time
from types import CodeType, FunctionType, SimpleNamespace
from weakref import WeakKeyDictionary

from ..errors import EvalInterrupted, EvalSyntaxRejected, RuleApiPermissionError
from . import check as checking
from .profile import CACHE_SIZE, Compiled, compiled
from .rewrite import rewrite
from .runtime import helpers, runtime, stateful_builtins
from .vocab import HELPER_PREFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ..rules.evaluation import EvalProfile

#: the largest source the guard parses (characters)
MAX_SOURCE = 10_000_000
MODES = ("exec", "eval", "single")


class Entry:
    """A checked, rewritten and compiled source."""

    __slots__ = ("__weakref__", "code", "converts", "helpers", "mode", "rules")

    def __init__(
        self, code: CodeType, used: frozenset[str], mode: str, rules: Compiled, converts: bool = True
    ) -> None:
        self.code = code
        self.helpers = used
        self.mode = mode
        self.rules = rules
        #: the code can convert between integers and text (a call, an f-string, ``%``)
        self.converts = converts


#: code objects the guarded compile() made -> their entry (nothing else runs under eval-* rules)
MADE: WeakKeyDictionary[CodeType, Entry] = WeakKeyDictionary()


def _library_filename(filename: str) -> bool:
    if filename.startswith("<frozen"):
        return True
    from ..guards.imports import library_prefixes

    return filename.startswith(library_prefixes())


def prepare(rules: Compiled, source: str, filename: str = "<eval>", mode: str = "eval") -> Entry:
    key = (source, mode, filename)
    cache = rules.cache
    entry: Entry | None = cache.get(key)
    if entry is not None:
        cache.move_to_end(key)
        return entry
    entry = _prepare(rules, source, filename, mode)
    cache[key] = entry
    if len(cache) > CACHE_SIZE:
        cache.popitem(last=False)
    MADE[entry.code] = entry
    return entry


def _prepare(rules: Compiled, source: str, filename: str, mode: str) -> Entry:
    if mode not in MODES:
        raise ValueError("compile() mode must be 'exec', 'eval' or 'single'")
    if len(source) > MAX_SOURCE:
        raise checking.rejection(
            rules,
            [checking.Violation(None, f"a source of {len(source)} characters is too long to be checked")],
            "",
            filename,
        )
    # Code whose file name looks like the standard library's would pass for library code.
    code_filename = "<eval>" if _library_filename(filename) else filename
    try:
        tree = checking.parse(source, code_filename, mode)
        checked = checking.check(rules, tree, source, code_filename)
        tree, used, converts = rewrite(checked.tree, checked.import_bound, rules.profile.max_alloc)
        code = compile(tree, code_filename, mode, dont_inherit=True)  # type: ignore[call-overload]
    except (EvalSyntaxRejected, SyntaxError):
        raise
    except Exception as exc:  # fail closed: never run what could not be checked
        what = "too deeply nested" if isinstance(exc, (RecursionError, MemoryError)) else "not checkable"
        raise checking.rejection(
            rules,
            [checking.Violation(None, f"the source is {what} ({type(exc).__name__})")],
            source,
            code_filename,
        ) from None
    return Entry(code, used, mode, rules, converts)


def _thread_count() -> int:
    return int(_thread._count())


def run(
    entry: Entry,
    values: Mapping[str, Any] | None = None,
    target: dict[str, Any] | None = None,
) -> Any:
    """Run ``entry`` with the variables ``values`` (copied in); the names it binds are
    written back into ``target`` when given. Same thread, no watchdog: the ticks stop it."""
    rules = entry.rules
    profile = rules.profile
    builtins_table = rules.builtins()
    state: list[Any] = [profile.max_iterations, time.monotonic() + profile.timeout, 0, None, True, True]
    if entry.converts:
        digits = sys.get_int_max_str_digits()
        if not digits or digits > rules.max_str_digits:
            raise EvalInterrupted(runtime(rules).digits_message(digits), "timeout")
    namespace: dict[str, Any] = {"__name__": "__eval__"}
    if values:
        namespace.update(values)
    wanted = entry.helpers
    made: dict[str, Any] = {}
    if wanted or rules.stateful or rules.dotted:
        made = helpers(rules, state, wanted)
        for name in wanted:
            namespace[HELPER_PREFIX + name] = made[name]
        if rules.stateful:
            builtins_table = {**builtins_table, **stateful_builtins(rules, made)}
    injected: dict[str, Any] = {}
    if rules.dotted:
        for root, proxy in _proxies(rules, made["guard"]).items():
            if root not in namespace:
                namespace[root] = injected[root] = proxy
    namespace["__builtins__"] = builtins_table
    threads = _thread_count() if profile.max_leaked_threads >= 0 else 0
    function = FunctionType(entry.code, namespace)
    try:
        result = function()
    finally:
        state[4] = False
        state[5] = False
        state[2] = 0
        if state[3] is None:
            state[0] = -1  # the next tick (a host calling an evaluated function) opens a window
        if target is not None:
            _write_back(namespace, target, injected, values)
        fired = state[3]
        if fired is not None:
            raise EvalInterrupted(fired[0], fired[1])  # sticky: even when the code swallowed it
    if _thread_count() - threads > profile.max_leaked_threads:
        message = runtime(rules).messages["leaked-threads"]
        raise EvalInterrupted(message, "leaked-threads")
    return result if entry.mode == "eval" else None


def _write_back(
    namespace: dict[str, Any], target: dict[str, Any], injected: dict[str, Any], values: Any
) -> None:
    for name, value in namespace.items():
        if name.startswith(HELPER_PREFIX) or name == "__builtins__":
            continue
        if injected.get(name) is value and name not in target:
            continue
        if name == "__name__" and (values is None or name not in values):
            continue
        if target.get(name, target) is not value:
            target[name] = value
    for name in [n for n in target if n not in namespace and n != "__builtins__"]:
        del target[name]


def _proxies(rules: Compiled, guard: Callable[[Any, str, Any], Any]) -> dict[str, Any]:
    """``eval-call=module.name`` grants: a fresh read-only view per run of each module root
    holding the granted members only, each passed through the run's ``guard``."""
    rt = runtime(rules)
    tree: dict[str, Any] = {}
    for grant in rules.dotted:
        parts = grant.split(".")
        try:
            module = __import__(parts[0])
        except ImportError:
            continue
        owner: Any = module
        node = tree.setdefault(parts[0], {})
        for depth, part in enumerate(parts[1:], start=1):
            last = depth == len(parts) - 1
            names = [part] if "*" not in part else [n for n in dir(owner) if not n.startswith("_")]
            if last:
                for name in names:
                    if rules.calls(".".join([*parts[:depth], name])) and hasattr(owner, name):
                        value = getattr(owner, name)
                        if type(value) is type(module):
                            node[name] = rt.module_result(value)
                        else:
                            node[name] = guard(owner, name, value)
            else:
                owner = getattr(owner, part, None)
                if owner is None:
                    break
                node = node.setdefault(part, {})

    def build(members: dict[str, Any]) -> Any:
        return SimpleNamespace(**{k: build(v) if isinstance(v, dict) else v for k, v in members.items()})

    return {root: build(members) for root, members in tree.items()}


# -- entry points ------------------------------------------------------------------------------


def evaluate(
    profile: EvalProfile,
    source: Any,
    namespace: dict[str, Any] | None = None,
    mode: str = "eval",
    filename: str = "<eval>",
) -> Any:
    """Check, rewrite and run ``source`` under ``profile``; ``namespace`` (a dict) gives the
    code its variables and receives the names it binds."""
    rules = compiled(profile)
    text = _text(source)
    if mode == "eval":
        text = text.lstrip(" \t")
    entry = prepare(rules, text, filename, mode)
    return run(entry, namespace, namespace)


def _text(source: Any) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, (bytes, bytearray)):
        return bytes(source).decode("utf-8")
    raise TypeError("the source must be a string or bytes")


def guarded_compile(
    profile: EvalProfile,
    source: Any,
    filename: Any,
    mode: str,
    flags: int = 0,
    dont_inherit: bool = False,
    optimize: int = -1,
    **kwargs: Any,
) -> Any:
    """``compile()`` for the program under eval-* rules: an AST is data (returned as is);
    code is checked and rewritten, and only such code objects run afterwards."""
    name = os.fsdecode(filename) if not isinstance(filename, str) else filename
    if flags & ast.PyCF_ONLY_AST:
        return ast.parse(
            _text(source) if not isinstance(source, ast.AST) else ast.unparse(source), name, mode
        )
    if isinstance(source, ast.AST):
        source = ast.unparse(source)  # a tree is revalidated from its text
    return prepare(compiled(profile), _text(source), name, mode).code


def guarded_run(
    function: str,
    profile: EvalProfile,
    source: Any,
    globals: Any,
    locals: Any,
    caller: Any,
    **kwargs: Any,
) -> Any:
    """``eval()``/``exec()`` of the program under the default profile.

    Namespaces (``eval-namespace``): *closed* — only the granted builtins and the variables of
    a globals/locals mapping given at the call site, copied in (the code's assignments stay
    in the evaluation); *adaptive* (the default) — a mapping given at the call site is the
    namespace (read, and the code's assignments written back to it, as with ``exec(s, ns)``),
    and without one the namespace is closed; *caller* — as adaptive, and without a mapping
    the caller's globals and locals are read and, at module level, written back.
    """
    if kwargs.get("closure") is not None:
        raise TypeError("closure can only be used when source is a code object made by compile()")
    if globals is not None and not isinstance(globals, dict):
        raise TypeError(f"{function}() globals must be a dict")
    rules = compiled(profile)
    mode = "eval" if function == "eval" else "exec"
    if isinstance(source, CodeType):
        entry = MADE.get(source)
        if entry is None or entry.rules is not rules:
            raise RuleApiPermissionError(
                f"builtins.{function}() is denied by the API guard (category: dynamic-code).\n"
                "Under eval-* rules only code objects made by compile() from checked source run.",
                f"builtins.{function}",
                "dynamic-code",
            )
    else:
        text = _text(source)
        entry = prepare(rules, text.lstrip(" \t") if mode == "eval" else text, "<eval>", mode)
    namespace_kind = profile.namespace
    values: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    if globals is not None or locals is not None:
        values = dict(globals or {})
        if locals is not None:
            values.update(locals)
        if namespace_kind != "closed":
            target = locals if isinstance(locals, dict) else globals
    elif namespace_kind == "caller" and caller is not None:
        values = dict(caller.f_globals)
        frame_locals = caller.f_locals
        if frame_locals is not caller.f_globals:
            values.update(frame_locals)
        else:
            target = caller.f_globals
    result = run(entry, values, target)
    return result if function == "eval" else None


def guarded_eval(
    source: Any, *, profile: str = "", namespace: dict[str, Any] | None = None, mode: str = "eval"
) -> Any:
    """Evaluate ``source`` under the ``eval-*`` profile ``profile`` of the rules in force
    (``""``: the default profile, ``eval-KEY=`` lines; ``NAME``: ``eval-KEY:NAME=`` lines).

    ``namespace``: the variables the code sees (copied in; the names it binds are written
    back). ``eval-namespace`` does not apply here: without ``namespace`` the code sees only
    the granted builtins. Returns the value of an expression (``mode="eval"``), else None.
    """
    from ..guards import _Armed

    policy = _Armed.policy
    profiles = policy.eval_profiles if policy is not None else {}
    found = profiles.get(profile)
    if found is None:
        raise ValueError(f"unknown eval profile {profile!r}, configured: {sorted(profiles)!r}")
    return evaluate(found, source, namespace, mode)
