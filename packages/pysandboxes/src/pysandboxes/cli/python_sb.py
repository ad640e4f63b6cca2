"""``python-sb``: the drop-in for ``python`` (complete mode). Wiring only; see ``complete.py``."""

from __future__ import annotations

import os
import sys

from .. import __version__
from ..errors import ProviderError, RuleSyntaxError
from .cpython_args import UsageError, parse_command_line, usage_hint, usage_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
    fresh: bool = False,
    ipython: bool = False,
    inside: str | None = None,
) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command = parse_command_line(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        hint = usage_hint()
        sys.stderr.write(hint if hint.endswith("\n") else hint + "\n")
        return exc.exit_code
    if command.help:
        if command.help_topic:  # --help-env, --help-xoptions, --help-all: python's own text
            sys.stdout.flush()
            os.execv(sys.executable, [sys.executable, f"--help-{command.help_topic}"])
        sys.stdout.write(usage_text())
        return 0
    if command.version:
        print(f"Python {sys.version.split()[0]}")
        if command.version > 1:
            print(f"python-sb {__version__} (PySandboxes)")
        return 0

    from .. import _log, complete, providers

    _log.setup_from_environment()

    host_environ = dict(os.environ if environ is None else environ)
    if isinstance(environ, dict):
        environ.clear()  # handed over by a fresh interpreter's bootstrap: keep no second copy
    here = os.getcwd() if cwd is None else cwd
    try:
        policy = complete.load(command, host_environ, here)
        # The program runs below this frame: it must not find the host's variables in it.
        host_environ.clear()
        if inside is not None:  # already in the sandbox a namespace provider built
            provider = inside
            from ..providers.namespaces import start_forwarder

            policy = start_forwarder(policy, provider)
        else:
            provider = complete.LEARNING if policy.learning else providers.require(policy)
        if not fresh and provider in complete.NAMESPACE_PROVIDERS:
            return complete.run_in_namespaces(args, command, policy, provider, here, ipython=ipython)
        limits = complete.limits_of(policy)
        if not fresh and limits.supervised():
            from ..supervise import supervise

            status = supervise(limits)
            if status is not None:
                return status  # the supervisor: the program ran (and ended) in the child
        if not fresh and complete.needs_fresh_interpreter(command, policy, provider):
            complete.exec_fresh_interpreter(args, command, policy, here, ipython=ipython)
        program = complete.Program(command, here, ipython=ipython)
        return complete.run(command, policy, provider, program)
    except RuleSyntaxError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        return 2
    except ProviderError as exc:
        print(f"python-sb: {exc}", file=sys.stderr)
        return 2
    except complete.Exit as exc:
        if exc.message:
            print(exc.message, file=sys.stderr)
        return exc.status
