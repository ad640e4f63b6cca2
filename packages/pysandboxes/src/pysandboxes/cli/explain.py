"""Render a :class:`Policy` for a reviewer: every effective rule, grouped by family, with origin."""

from __future__ import annotations

from ..rules.api_registry import CATEGORIES
from ..rules.origin import display_path
from ..rules.policy import Policy, Setting


def _origin(setting: Setting) -> str:
    return str(setting.rule.origin) if setting.rule is not None else "default"


def _ports(ports: tuple[tuple[int, int], ...]) -> str:
    if ports == ((0, 65535),):
        return "any port"
    return ",".join(str(lo) if lo == hi else (f"{lo}-" if hi == 65535 else f"{lo}-{hi}") for lo, hi in ports)


def explain(policy: Policy) -> str:
    out: list[str] = []
    add = out.append
    if policy.main_file:
        add(f"Rules of {display_path(policy.main_file)}")
    else:
        add("Rules of the built-in template (no rule file)")
    for inc in policy.includes:
        state = "read" if inc.present else "absent"
        add(f'  include "{inc.written}" -> {display_path(inc.path)} ({state})  {inc.origin}')
    if policy.locked_by is not None:
        add(
            f"  locked by 'learn=false' at {policy.locked_by.origin}: no learning, no rule from the command line or code"
        )
    else:
        add("  not locked (no learn=false): the command line and the code may add rules")
    if policy.learn_target:
        add(f"  LEARNING into {display_path(policy.learn_target)}: every access is allowed and recorded")

    add("")
    add("Layers")
    add(f"  py-sandbox  {'on' if policy.py_sandbox.value else 'OFF'}  ({_origin(policy.py_sandbox)})")
    provider = policy.os_sandbox.value or "not set (landlock where available, else subprocess)"
    written = f", written {policy.os_sandbox.rule.text}" if policy.os_sandbox.rule else ""
    add(f"  os-sandbox  {provider}  ({_origin(policy.os_sandbox)}{written})")

    add("")
    values = policy.env.values
    add(f"Environment: {len(values)} variable{'s' if len(values) != 1 else ''}, nothing else")
    for name in sorted(values):
        rule = policy.env.sources[name]
        template = rule.value.split("=", 1)[1]
        shown = f"from {template}" if "${" in template else f"= {values[name]!r}"
        add(f"  {name} {shown}  ({rule.origin})")
    for pattern, rule in policy.env.unenv:
        add(f"  removed: {pattern}  ({rule.origin})")

    add("")
    add("Files (longest exposed prefix decides; nothing else is reachable)")
    exposures = sorted(policy.files_policy.exposures, key=lambda e: (e.rule is None, e.path))
    for e in exposures:
        mode = "read-write" if e.writable else "read-only "
        source = f"{e.rule.text}  ({e.origin})" if e.rule else str(e.origin)
        add(f"  {mode} {e.path}  {source}")
    for ig in policy.files_policy.ignores:
        add(f"  hidden     {ig.pattern}  ({ig.rule.origin})")
    if policy.files_policy.protected:
        add(
            "  never writable by the program: "
            + ", ".join(sorted(display_path(p) for p in policy.files_policy.protected))
        )

    add("")
    add("Network (DENY lines first, then ALLOW; anything else is refused)")
    if not policy.net.rules:
        add("  no net= rule: every connection and listening socket is refused")
    for r in (*policy.net.deny, *policy.net.allow):
        action = "ALLOW" if r.allow else "DENY "
        protos = "/".join(sorted(r.protocols))
        dirs = "+".join(sorted(d.upper() for d in r.directions))
        add(f"  {action} {protos} {r.host} {_ports(r.ports)} {dirs}  ({r.rule.origin})")

    add("")
    add("Imports (top-level names; PySandboxes' own modules need no rule)")
    if not policy.imports:
        add("  none allowed")
    elif "*" in policy.imports:
        add(f"  EVERY module  ({policy.imports['*'].origin})")
    else:
        by_origin: dict[str, list[str]] = {}
        for name, rule in policy.imports.items():
            by_origin.setdefault(str(rule.origin), []).append(name)
        for origin, names in by_origin.items():
            add(f"  {', '.join(sorted(names))}  ({origin})")

    add("")
    add(f"Sensitive calls (registry of {len(CATEGORIES)} categories; refused unless allowed)")
    if not policy.api.rules:
        add("  none allowed")
    for api_rule in policy.api.rules:
        add(f"  {'ALLOW' if api_rule.allow else 'DENY '} {api_rule.target}  ({api_rule.rule.origin})")

    add("")
    add("Code given to eval/exec/compile")
    if not policy.eval_profiles:
        add("  no eval-* rule: eval(), exec() and compile() are refused")
    for name, profile in sorted(policy.eval_profiles.items()):
        label = f"profile '{name}'" if name else "default profile"
        add(f"  {label}: namespace={profile.namespace}, timeout={profile.timeout:g}s")
        for eval_rule in profile.rules:
            add(f"    {eval_rule.text}  ({eval_rule.origin})")

    add("")
    add(
        f"Values returned by @sandbox functions: {policy.remote_result_mode.value} ({_origin(policy.remote_result_mode)})"
    )
    guard = "on" if policy.remote_result_guard.value else "OFF"
    add(f"  result guard (denylist in objects mode): {guard} ({_origin(policy.remote_result_guard)})")
    if policy.provider_options:
        add("")
        add("Provider settings (applied only under their provider)")
        for provider, options in sorted(policy.provider_options.items()):
            active = " (active)" if provider == policy.os_sandbox.value else ""
            for key, setting in sorted(options.items()):
                add(f"  {provider}.{key}={setting.value!r}{active}  ({_origin(setting)})")
    return "\n".join(out) + "\n"
