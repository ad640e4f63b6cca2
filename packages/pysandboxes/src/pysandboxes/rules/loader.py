"""From rule files, command-line rules and code rules to a compiled :class:`Policy`.

Every problem of one load is collected, then raised together as one ``RuleSyntaxError``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from ..errors import RuleProblem, RuleSyntaxError
from .api import ApiPolicy, compile_api
from .context import Context, Rule
from .environment import compile_env
from .eval_vocab import EVAL_LIST_KEYS, EVAL_SCALARS
from .evaluation import EvalProfile, compile_eval, split_eval_key
from .files import compile_files
from .lexer import lex
from .network import compile_net
from .origin import CODE, COMMAND_LINE, Origin
from .policy import Include, Policy, Setting
from .provider_keys import PROVIDER_KEYS, PROVIDERS, normalise
from .substitution import split_outside_references
from .values import closest, parse_bool, parse_decimal_size, parse_duration, parse_int, parse_size

RULE_FILE_NAME = ".py-sandboxes"

#: Includes the template ships: their absence is normal.
OPTIONAL_INCLUDES = frozenset(
    {
        "~/.config/py-sandboxes/user-py-sandboxes.profile",
        "/etc/py-sandboxes/global-py-sandboxes.profile",
        "./.local.py-sandboxes",
    }
)

#: resource limits: key -> (parser kind, minimum)
LIMITS: Mapping[str, tuple[str, int]] = {
    "limit-cpu": ("duration", 1),
    "limit-memory": ("size", 32 << 20),
    "limit-processes": ("int", 1),
    "limit-open-files": ("int", 16),
    "limit-file-size": ("size", 1),
    "limit-output": ("size", 1),
}
LIMIT_KEYS = tuple(LIMITS)

SINGLETON_KEYS = (
    "py-sandbox",
    "os-sandbox",
    "learn",
    "port",
    "remote-result-mode",
    "remote-result-guard",
    "remote-max-payload",
    "timeout",
    *LIMIT_KEYS,
)
#: a call's payload (arguments or result) above this is refused with a clear error
DEFAULT_MAX_PAYLOAD = 1 << 30
LIST_KEYS = ("env", "unenv", "expose-ro", "expose-rw", "ignore", "net", "python-import", "python-api")
KNOWN_KEYS = (*SINGLETON_KEYS, *LIST_KEYS, *EVAL_LIST_KEYS, *EVAL_SCALARS)

ExtraRules = Mapping[str, object] | Iterable[tuple[str, object]]


class _Reader:
    """Reads the main file and its includes into rules, in order."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.rules: list[Rule] = []
        self.files: list[str] = []
        self.missing: list[str] = []
        self.includes: list[Include] = []
        self._done: set[str] = set()

    def read_text(self, text: str, path: str | None, stack: tuple[str, ...]) -> None:
        """Read rule text; ``path`` None means the built-in template used in place of a file."""
        base = os.path.dirname(path) if path else self.ctx.cwd
        statements, problems = lex(text)
        where = path or "<template>"
        for p in problems:
            self.ctx.problem(Origin(where, p.line), p.message)
        for st in statements:
            origin = Origin(where, st.line)
            if st.kind == "rule":
                self.rules.append(Rule(st.key, st.value, origin, base))
                continue
            if st.key == "include-platform" and st.platform != sys.platform:
                continue
            self._include(st.value, st.key, origin, base, stack)

    def read_file(self, path: str, origin: Origin | None, stack: tuple[str, ...]) -> bool:
        text = _read(path, origin or Origin(path, 0), self.ctx)
        if text is None:
            return False
        self.files.append(path)
        self._done.add(path)
        self.read_text(text, path, (*stack, path))
        return True

    def _include(self, written: str, kind: str, origin: Origin, base: str, stack: tuple[str, ...]) -> None:
        rule = Rule("include", written, origin, base)
        value = self.ctx.expand(rule, written)
        if value is None:
            return
        if value.startswith("~"):
            expanded = self.ctx.expand_home(value)
            if expanded.startswith("~"):
                self.ctx.problem(origin, f'include "{written}": the home directory is unknown')
                return
            value = expanded
        # A bare name is next to the including file; a path with a '/' is taken from the
        # working directory (so "./.local.py-sandboxes" is the caller's file) or is absolute.
        if "/" not in value:
            path = os.path.join(base, value)
        else:
            path = os.path.join(self.ctx.cwd, value)
        path = os.path.normpath(path)
        self.includes.append(Include(written, path, origin, os.path.lexists(path)))
        if path in stack:
            chain = " -> ".join(os.path.basename(p) for p in (*stack, path))
            self.ctx.problem(origin, f'include "{written}" makes a cycle ({chain}); remove one include')
            return
        if path in self._done:
            return  # already read through another include
        optional = kind == "include-optional" or written in OPTIONAL_INCLUDES
        if optional and not os.path.lexists(path):
            _debug("optional include %s is absent", path)
            self.missing.append(path)
            return
        self.read_file(path, origin, stack)


def _debug(message: str, *args: object) -> None:
    """Log on the 'pysandboxes.rules' logger, importing logging only when it is in use."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger("pysandboxes.rules").debug(message, *args)


def _read(path: str, origin: Origin, ctx: Context) -> str | None:
    what = "rule file" if origin.line == 0 else "include"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        ctx.problem(origin, f"{what} '{path}' does not exist")
        return None
    except IsADirectoryError:
        ctx.problem(origin, f"{what} '{path}' is a directory, not a rule file")
        return None
    except OSError as exc:
        ctx.problem(origin, f"cannot read {what} '{path}': {exc.strerror or exc}")
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte-order mark written by some editors
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        ctx.problem(
            Origin(path, line),
            f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8",
        )
        return None


def normalise_extra_rules(
    extra: ExtraRules | None, source: str, cwd: str
) -> tuple[list[Rule], list[RuleProblem]]:
    """Turn ``{"os_sandbox": "bwrap", "python_import": ["json"]}`` or CLI pairs into rules."""
    rules: list[Rule] = []
    problems: list[RuleProblem] = []
    if not extra:
        return rules, problems
    items = extra.items() if isinstance(extra, Mapping) else extra
    for index, (key, value) in enumerate(items, start=1):
        origin = Origin(None, index, source)
        head, dot, tail = str(key).partition(".")
        base, colon, profile = head.partition(":")  # eval_call:my_profile keeps its profile name
        name = base.replace("_", "-") + colon + profile + dot + tail
        if isinstance(value, (list, tuple, set, frozenset)):
            values = (
                sorted(str(v) for v in value)
                if isinstance(value, (set, frozenset))
                else [str(v) for v in value]
            )
            if not values:
                values = [""]
        elif isinstance(value, bool):
            values = ["true" if value else "false"]
        elif value is None:
            values = [""]
        else:
            values = [str(value)]
        for v in values:
            if "\n" in v or "\r" in v or "\x00" in v:
                problems.append(RuleProblem(origin, f"the value of {name} holds a line break or NUL"))
                continue
            rules.append(Rule(name, v, origin, cwd))
    return rules, problems


def _limit(value: str, key: str, kind: str, minimum: int) -> float | int:
    if kind == "duration":
        seconds = parse_duration(value, key)
        if seconds < minimum:
            raise ValueError(f"{key} must be at least {minimum}s (the kernel counts whole CPU seconds)")
        return seconds
    if kind == "size":
        size = parse_size(value, key)
        if size < minimum:
            shown = f"{minimum >> 20}M" if minimum >= 1 << 20 else f"{minimum} bytes"
            raise ValueError(f"{key} must be at least {shown}, got '{value}'")
        return size
    return parse_int(value, key, minimum=minimum)


def _spell(rule: Rule) -> str:
    """How the user wrote an extra rule: ``--expose-ro=/etc`` or ``expose_ro='/etc'``."""
    if rule.origin.source == CODE:
        head, dot, tail = rule.key.partition(".")
        base, colon, profile = head.partition(":")
        return f"{base.replace('-', '_')}{colon}{profile}{dot}{tail}={rule.value!r}"
    return f"--{rule.key}={rule.value}" if rule.value else f"--{rule.key}"


def load_policy(
    path: str | os.PathLike[str] | None,
    *,
    extra_rules: ExtraRules | None = None,
    extra_source: str = COMMAND_LINE,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
    missing_file: str = "error",
) -> Policy:
    """Load the rule file ``path`` (and its includes), add the extra rules, compile.

    ``missing_file="learn"``: a missing rule file is replaced by the built-in template and
    the run learns into that path (refused when the rules are locked with ``learn=false``).
    Raises ``RuleSyntaxError`` with every problem found.
    """
    ctx = Context(os.environ if environ is None else environ, os.path.abspath(cwd or os.getcwd()))
    reader = _Reader(ctx)
    main_file: str | None = None
    missing_rule_file: str | None = None
    if path is not None:
        main = os.path.abspath(os.path.join(ctx.cwd, os.fspath(path)))
        if os.path.isdir(main):
            main = os.path.join(main, RULE_FILE_NAME)
        if missing_file == "learn" and not os.path.lexists(main):
            missing_rule_file = main
        elif reader.read_file(main, None, ()):
            main_file = main
    if path is None or missing_rule_file is not None:
        from .template import render_template

        reader.read_text(render_template("subprocess"), None, ())

    extras, extra_problems = normalise_extra_rules(extra_rules, extra_source, ctx.cwd)
    ctx.problems.extend(extra_problems)
    file_rules = reader.rules
    all_rules = [*file_rules, *extras]

    by_key: dict[str, list[Rule]] = {}
    provider_rules: list[Rule] = []
    eval_rules: list[Rule] = []
    for rule in all_rules:
        base, _ = split_eval_key(rule.key)
        if "." in rule.key:
            provider_rules.append(rule)
        elif base in EVAL_LIST_KEYS or base in EVAL_SCALARS:
            eval_rules.append(rule)
        elif rule.key in SINGLETON_KEYS or rule.key in LIST_KEYS:
            by_key.setdefault(rule.key, []).append(rule)
        else:
            hint = closest(rule.key, KNOWN_KEYS)
            shown = _spell(rule) if not rule.origin.is_file else f"'{rule.text}'"
            ctx.problem(rule.origin, f"unknown key '{rule.key}' in {shown}{hint}")

    # -- the lock: 'learn=false' in a rule file ------------------------------------------
    locked_by = next(
        (r for r in by_key.get("learn", []) if r.origin.is_file and r.value.strip().lower() == "false"),
        None,
    )
    if locked_by is not None:
        for rule in extras:
            if rule.key == "learn":
                continue  # reported below as a learning request
            who = "the code" if rule.origin.source == CODE else "the command line"
            ctx.problem(
                locked_by.origin,
                f"'learn=false' locks the rules: {who} cannot add {_spell(rule)}",
            )
        if missing_rule_file is not None:
            ctx.problem(
                locked_by.origin,
                f"learning mode is forbidden by 'learn=false', but requested by the missing "
                f"rule file '{missing_rule_file}'; create it, or point to it",
            )

    singles = {key: _singleton(key, by_key.get(key, []), ctx) for key in SINGLETON_KEYS}

    py_sandbox = Setting(True, None)
    if (r := singles["py-sandbox"]) is not None:
        try:
            py_sandbox = Setting(parse_bool(ctx.expand(r, r.value) or "", "py-sandbox", empty=True), r)
        except ValueError as exc:
            ctx.problem(r.origin, str(exc))

    os_sandbox = Setting(None, None)
    if (r := singles["os-sandbox"]) is not None:
        value = ctx.expand(r, r.value.strip())
        if value is not None:
            name = value.strip().lower()
            if name in PROVIDERS:
                os_sandbox = Setting(name, r)
            else:
                ctx.problem(
                    r.origin,
                    f"invalid os-sandbox '{value}'{closest(name, PROVIDERS)}: use one of {', '.join(PROVIDERS)}",
                )

    remote_mode = Setting("data-only", None)
    if (r := singles["remote-result-mode"]) is not None:
        value = (ctx.expand(r, r.value.strip()) or "").strip().lower()
        if value in ("data-only", "data_only", "default"):
            remote_mode = Setting("data-only", r)
        elif value == "objects":
            remote_mode = Setting("objects", r)
        else:
            ctx.problem(r.origin, f"invalid remote-result-mode '{r.value}': use data-only or objects")

    remote_guard = Setting(True, None)
    if (r := singles["remote-result-guard"]) is not None:
        try:
            remote_guard = Setting(
                parse_bool(ctx.expand(r, r.value) or "", "remote-result-guard", empty=True), r
            )
        except ValueError as exc:
            ctx.problem(r.origin, str(exc))

    max_payload = Setting(DEFAULT_MAX_PAYLOAD, None)
    if (r := singles["remote-max-payload"]) is not None:
        try:
            max_payload = Setting(parse_decimal_size(ctx.expand(r, r.value) or "", "remote-max-payload"), r)
        except ValueError as exc:
            ctx.problem(r.origin, str(exc))

    timeout = Setting(None, None)
    if (r := singles["timeout"]) is not None:
        try:
            timeout = Setting(parse_duration(ctx.expand(r, r.value) or "", "timeout"), r)
        except ValueError as exc:
            ctx.problem(r.origin, str(exc))

    limits: dict[str, Setting] = {}
    for key, (kind, minimum) in LIMITS.items():
        limits[key] = Setting(None, None)
        if (r := singles[key]) is not None:
            try:
                limits[key] = Setting(_limit(ctx.expand(r, r.value) or "", key, kind, minimum), r)
            except ValueError as exc:
                ctx.problem(r.origin, str(exc))

    port = Setting(None, None)
    if (r := singles["port"]) is not None:
        try:
            port = Setting(parse_int(ctx.expand(r, r.value) or "", "port"), r)
        except ValueError as exc:
            ctx.problem(r.origin, str(exc))
        else:
            ctx.note(r.origin, "port= has no effect: the sandbox talks over a private channel, not TCP")

    learn_target = _learn_target(singles["learn"], main_file or missing_rule_file, ctx)
    if missing_rule_file is not None and learn_target is None and locked_by is None:
        learn_target = missing_rule_file
    if learn_target is not None and locked_by is not None and singles["learn"] is not locked_by:
        r = singles["learn"]
        asked = _spell(r) if r is not None and not r.origin.is_file else "the rule files"
        ctx.problem(
            locked_by.origin,
            f"learning mode is forbidden by 'learn=false', but requested by {asked}",
        )
    if learn_target is not None and py_sandbox.value is False:
        assert py_sandbox.rule is not None
        ctx.problem(
            py_sandbox.rule.origin,
            "learning needs the Python layer, but py-sandbox=false turns it off: "
            "remove py-sandbox=false while learning",
        )

    guarded = [*reader.files, *reader.missing, *([learn_target] if learn_target else [])]
    # decide() gets resolved paths: protect the real path of a rule file reached by a symlink too.
    protected = frozenset([*guarded, *(os.path.realpath(p) for p in guarded)])
    files_policy = compile_files(
        [r for r in all_rules if r.key in ("expose-ro", "expose-rw")],  # in reading order
        by_key.get("ignore", []),
        protected,
        ctx,
    )
    net = compile_net(by_key.get("net", []), ctx)
    env = compile_env(by_key.get("env", []), by_key.get("unenv", []), ctx)
    imports = _compile_imports(by_key.get("python-import", []), ctx)
    api = compile_api(by_key.get("python-api", []), ctx)
    eval_profiles = compile_eval(eval_rules, ctx)
    _check_eval_against_api(eval_profiles, api, ctx)
    provider_options = _compile_provider_keys(provider_rules, ctx)

    if ctx.problems:
        raise RuleSyntaxError(ctx.problems)
    return Policy(
        main_file=main_file,
        files=tuple(reader.files),
        missing_includes=tuple(reader.missing),
        includes=tuple(reader.includes),
        rules=tuple(all_rules),
        py_sandbox=py_sandbox,
        os_sandbox=os_sandbox,
        learn_target=learn_target,
        locked_by=locked_by,
        remote_result_mode=remote_mode,
        remote_result_guard=remote_guard,
        remote_max_payload=max_payload,
        timeout=timeout,
        limits=MappingProxyType(limits),
        port=port,
        files_policy=files_policy,
        net=net,
        env=env,
        imports=MappingProxyType(imports),
        api=api,
        eval_profiles=eval_profiles,
        provider_options=provider_options,
        notes=tuple(sorted(ctx.notes, key=RuleProblem.sort_key)),
    )


def _singleton(key: str, rules: list[Rule], ctx: Context) -> Rule | None:
    """The rule that sets a singleton key: files set it once; the CLI or code overrides."""
    in_files = [r for r in rules if r.origin.is_file]
    extras = [r for r in rules if not r.origin.is_file]
    for dup in in_files[1:]:
        if _same_value(key, dup.value, in_files[0].value):
            continue  # the same value twice (e.g. learn=false in two profiles) is harmless
        ctx.problem(
            dup.origin,
            f"'{dup.text}': {key} is already set to another value at {in_files[0].origin}; "
            "set it in one rule file only (the command line or the code may override it)",
        )
    for dup in extras[1:]:
        if dup.value != extras[0].value:
            ctx.problem(
                dup.origin,
                f"{key} is given twice with different values: {_spell(extras[0])} and {_spell(dup)}",
            )
    if extras:
        return extras[0]
    return in_files[0] if in_files else None


def _same_value(key: str, a: str, b: str) -> bool:
    a, b = a.strip(), b.strip()
    if key == "learn" or key in ("py-sandbox", "os-sandbox", "remote-result-mode", "remote-result-guard"):
        return a.lower() == b.lower()
    return a == b


def _learn_target(rule: Rule | None, rule_file: str | None, ctx: Context) -> str | None:
    if rule is None:
        return None
    value = rule.value.strip()
    low = value.lower()
    if rule.origin.is_file and low == "false":
        return None  # the lock
    if low in ("true", "false", "0", "1", "yes", "no", "on", "off"):
        where = "in a rule file, learn=false locks learning; " if rule.origin.is_file else ""
        ctx.problem(
            rule.origin,
            f"invalid learn={value}: {where}to learn, give the file that receives the rules, "
            "e.g. learn=.py-sandboxes.learn",
        )
        return None
    if "${" in value:
        ctx.problem(
            rule.origin,
            f"'{rule.text}': learn= takes a literal file name; variables are not expanded here "
            "so that the environment cannot switch learning on",
        )
        return None
    if not value:
        if rule_file is None:
            return os.path.join(ctx.cwd, RULE_FILE_NAME)
        return rule_file
    if "\x00" in value:
        ctx.problem(rule.origin, f"'{rule.text}': the file name holds a NUL character")
        return None
    target = os.path.normpath(os.path.join(rule.base_dir, ctx.expand_home(value)))
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        ctx.problem(rule.origin, f"'{rule.text}': the directory '{parent}' does not exist; create it first")
        return None
    if os.path.isdir(target):
        ctx.problem(rule.origin, f"'{rule.text}': '{target}' is a directory; name a file")
        return None
    return target


def _compile_imports(rules: list[Rule], ctx: Context) -> dict[str, Rule]:
    allowed: dict[str, Rule] = {}
    for rule in rules:
        upper = rule.value.strip().upper()
        if upper.startswith(("ALLOW:", "DENY:")):
            ctx.problem(
                rule.origin,
                f"'{rule.text}': python-import has no ALLOW:/DENY: form; list top-level module "
                "names, e.g. python-import=json, csv",
            )
            continue
        # Split first, then substitute: a variable fills one name, it cannot add names.
        for written in split_outside_references(rule.value, ","):
            name = ctx.expand(rule, written.strip())
            if name is None:
                continue
            name = name.strip()
            if not name:
                continue
            if name == "*":
                allowed.setdefault("*", rule)
            elif "." in name and all(part.isidentifier() for part in name.split(".")):
                top = name.split(".")[0]
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}': python-import takes top-level names: write '{top}' (it covers '{name}')",
                )
            elif name.isidentifier():
                allowed.setdefault(name, rule)
            else:
                ctx.problem(rule.origin, f"'{rule.text}': '{name}' is not a module name")
    return allowed


def _check_eval_against_api(profiles: Mapping[str, EvalProfile], api: ApiPolicy, ctx: Context) -> None:
    if not profiles:
        return
    first = min((r for p in profiles.values() for r in p.rules), key=lambda r: r.origin.sort_key())
    for fn in ("builtins.eval", "builtins.exec", "builtins.compile"):
        decision = api.decide(fn)
        if decision.allowed and decision.rule is not None:
            ctx.problem(
                first.origin,
                f"'{first.text}' is never applied: {decision.rule.rule.describe()} lets "
                f"{fn}() run unguarded; remove the eval-* lines or the python-api grant",
            )
            return


def _compile_provider_keys(rules: list[Rule], ctx: Context) -> Mapping[str, Mapping[str, Setting]]:
    options: dict[str, dict[str, Setting]] = {}
    seen: dict[tuple[str, str], Rule] = {}
    for rule in rules:
        provider, _, key = rule.key.partition(".")
        if provider not in PROVIDER_KEYS:
            ctx.problem(
                rule.origin,
                f"unknown provider key '{rule.key}'{closest(provider, PROVIDER_KEYS)}: "
                f"provider keys start with {', '.join(p + '.' for p in PROVIDER_KEYS)}",
            )
            continue
        name = normalise(provider, key)
        if name is None:
            known = ", ".join(f"{provider}.{k}" for k in PROVIDER_KEYS[provider])
            ctx.problem(
                rule.origin,
                f"unknown key '{rule.key}'"
                f"{closest(rule.key, [f'{provider}.{k}' for k in PROVIDER_KEYS[provider]])}; "
                f"{provider} knows {known}",
            )
            continue
        previous = seen.get((provider, name))
        # Like a singleton: once across files, the command line or code overrides.
        if previous is not None and not (previous.origin.is_file and not rule.origin.is_file):
            if previous.value.strip() != rule.value.strip():
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}': {provider}.{name} is already set to another value at {previous.origin}",
                )
            continue
        seen[(provider, name)] = rule
        value = ctx.expand(rule, rule.value)
        if value is None:
            continue
        try:
            parsed = PROVIDER_KEYS[provider][name].parse(value, f"{provider}.{name}")
        except ValueError as exc:
            ctx.problem(rule.origin, str(exc))
            continue
        options.setdefault(provider, {})[name] = Setting(parsed, rule)
    return MappingProxyType({p: MappingProxyType(o) for p, o in options.items()})
