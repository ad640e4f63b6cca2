"""Risky rules a reviewer should look at twice (``pysandboxes check``).

Warnings never stop a load: each names a line that is valid but grants a lot.
"""

from __future__ import annotations

import fnmatch
import os

from ..errors import RuleProblem
from .origin import BUILTIN, Origin
from .policy import Policy


def is_shipped(rule_file: str) -> bool:
    """Whether a rule file looks like one that ships with code: inside a Python package, or
    in an agent skill (a SKILL.md in its directory or the one above)."""
    directory = os.path.dirname(rule_file)
    if os.path.isfile(os.path.join(directory, "__init__.py")):
        return True
    return any(os.path.isfile(os.path.join(d, "SKILL.md")) for d in (directory, os.path.dirname(directory)))


def review(policy: Policy, *, shipped: bool = False) -> list[RuleProblem]:
    warnings: list[RuleProblem] = []

    def warn(rule: object, message: str) -> None:
        origin = rule.origin  # type: ignore[attr-defined]
        warnings.append(RuleProblem(origin, f"warning: '{rule}' {message}"))

    home = os.path.realpath(os.path.expanduser("~"))
    project = os.path.dirname(policy.main_file) if policy.main_file else None
    for exposure in policy.files_policy.exposures:
        if exposure.rule is None:
            continue
        p = exposure.path
        if p == "/":
            warn(exposure.rule, "exposes the whole file system")
        elif p == home:
            warn(exposure.rule, "exposes the whole home directory (keys, tokens, browser profiles)")
        elif project and p != project and project.startswith(p.rstrip("/") + "/"):
            warn(exposure.rule, f"exposes a parent of the project directory ({project})")
        elif p == project:
            warn(exposure.rule, "exposes the whole project directory" + _narrower(p))
        if p in (home, "/"):
            continue
        secrets = [s for s in _secret_files(p) if policy.files_policy._ignored(s, p) is None]
        if secrets:
            names = ", ".join(os.path.relpath(s, p) for s in secrets[:3]) + (", ..." if secrets[3:] else "")
            hidden = "\n".join(f"    ignore={os.path.basename(s)}" for s in secrets[:3])
            warn(
                exposure.rule,
                f"exposes secret-looking files ({names}): hide them with\n{hidden}\n  "
                "(the Python layer and the namespace providers honour ignore=; under landlock native "
                "code still reads them) or expose a narrower directory",
            )

    if "*" in policy.imports:
        warn(policy.imports["*"], "allows every import: remove it, relearn and review before shipping")

    for api_rule in policy.api.rules:
        if api_rule.allow and api_rule.target in (
            "*",
            "process-exec",
            "native",
            "dynamic-code",
            "introspection",
        ):
            what = {
                "*": "allows every sensitive call (the API guard is off)",
                "process-exec": "lets the program start other programs, which the Python layer cannot watch",
                "native": "lets the program load native code and touch raw memory",
                "dynamic-code": "lets eval/exec/compile run any code unguarded",
                "introspection": "lets tracing and the object graph reach into the guards' own frames",
            }[api_rule.target]
            warn(api_rule.rule, what)

    for net_rule in policy.net.rules:
        if net_rule.allow and net_rule.host == "*" and net_rule.ports == ((0, 65535),):
            warn(net_rule.rule, "allows every address on every port")

    for env_rule in policy.env.rules:
        if env_rule.name == "*":
            warn(env_rule.rule, "forwards the whole environment, secrets included")

    if shipped:
        if policy.locked_by is None:
            where = policy.main_file or "the rule file"
            warnings.append(
                RuleProblem(
                    _file_origin(policy),
                    f"warning: {os.path.basename(where)} ships without 'learn=false': anyone running "
                    "it can add rules on the command line or learn new ones; add learn=false",
                )
            )
        setting = policy.os_sandbox.rule
        if setting is not None and setting.origin.is_file and "${" in setting.value:
            warn(setting, "lets an environment variable choose (or weaken) the OS provider; name it")
        for inc in policy.includes:
            if inc.written.startswith(("./", "../")) and inc.origin.is_file:
                warnings.append(
                    RuleProblem(
                        inc.origin,
                        f"warning: 'include \"{inc.written}\"' reads rules from the directory the "
                        "program is started in: whoever runs it can add rights; remove it",
                    )
                )
        for rule in policy.rules:
            if rule.key == "learn" and rule.value.strip().lower() != "false" and rule.origin.is_file:
                warn(rule, "turns learning on for every run; remove it before shipping")
    return warnings


#: file names that usually hold credentials: dotenv files, private keys, client credentials
SECRET_PATTERNS = (
    *(".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx"),
    *("id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass", "credentials.json"),
)
#: templates that hold no secret, public keys
NOT_SECRET = ("*.pub", "*.example", "*.sample", "*.template", "*.dist")
#: directories the scan does not enter (big, and not where secrets are kept by hand)
_SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages", ".tox"})


def _is_secret(name: str) -> bool:
    if any(fnmatch.fnmatchcase(name, p) for p in NOT_SECRET):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in SECRET_PATTERNS)


def _secret_files(directory: str, depth: int = 2, budget: int = 2000) -> list[str]:
    """Secret-looking files in ``directory`` and up to ``depth - 1`` levels below it, in a
    bounded scan (``budget`` entries): a review must not walk a whole disk."""
    found: list[str] = []
    level = [directory]
    for _ in range(depth):
        deeper: list[str] = []
        for d in level:
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                budget -= 1
                if budget < 0:
                    return found
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED_DIRS:
                        deeper.append(entry.path)
                elif _is_secret(entry.name):
                    found.append(entry.path)
        level = deeper
    return found


def _narrower(project: str) -> str:
    """The hint of a project-wide exposure: the subdirectories that could be exposed instead."""
    try:
        subdirs = sorted(
            e.name for e in os.scandir(project) if e.is_dir() and not e.name.startswith((".", "_"))
        )
    except OSError:
        subdirs = []
    subdirs = [d for d in subdirs if d not in _SKIPPED_DIRS]
    if not subdirs:
        return " (its .env, keys and .git included): expose only the subdirectories the program needs"
    lines = "\n".join(f"    expose-ro=./{d}" for d in subdirs[:3])
    return (
        " (its .env, keys and .git included): expose only the subdirectories the program needs, e.g.\n"
        + lines
    )


def _file_origin(policy: Policy) -> Origin:
    return Origin(policy.main_file, 0) if policy.main_file else Origin(None, 0, BUILTIN, "<template>")
