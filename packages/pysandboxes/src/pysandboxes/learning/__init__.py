"""Learning mode: run a trusted program, record what it touches, write the rules it needs.

Learning is permissive and has no OS boundary: every guard records instead of refusing what a
rule could allow, the program sees the whole host environment, and at the end the rules are
written into the rule file's ``# <learning_guard_…>`` blocks for a human to review.
"""

from __future__ import annotations

import contextlib
import os
import sys

from .recorder import Recorder, record_environment, record_resolutions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..rules.policy import Policy

__all__ = ["PartialLearning", "Recorder", "Session", "banner"]


def banner(target: str, *, tool: str = "python-sb") -> str:
    return (
        f"{tool}: LEARNING MODE: no OS boundary, nothing is refused that a rule could allow; "
        f"the rules this run needs go to {target}. Run only trusted code.\n"
    )


def shown(path: str, cwd: str | None = None) -> str:
    """``./name`` for a path under the working directory, the path otherwise."""
    here = cwd or os.getcwd()
    absolute = os.path.abspath(path)
    if absolute.startswith(here.rstrip("/") + "/"):
        return "./" + absolute[len(here.rstrip("/")) + 1 :]
    return absolute


class Session:
    """One learning run in this process: the recorder, and the write at the end (once, at
    normal exit, on an exception, Ctrl-C or SIGTERM)."""

    def __init__(self, policy: Policy, environ: Mapping[str, str], *, tool: str = "python-sb") -> None:
        assert policy.learn_target is not None
        self.policy = policy
        self.target = policy.learn_target
        self.environ = dict(environ)  # the host's, for ${VIRTUAL_ENV}, ~ and ${TMPDIR}
        self.tool = tool
        self.recorder = Recorder(policy=policy)
        self.finished = False

    def start(self) -> None:
        """Watch the environment and name resolution (before the program runs)."""
        record_environment(self.recorder)
        record_resolutions(self.recorder)
        self._watch_sigterm()

    def _watch_sigterm(self) -> None:
        import signal

        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: object) -> None:
            self.finish()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        with contextlib.suppress(ValueError):  # not the main thread: no handler
            signal.signal(signal.SIGTERM, on_sigterm)

    def finish(self) -> None:
        """Write what was learned (once) and print the summary on stderr."""
        if self.finished:
            return
        self.finished = True
        from ..providers import default_provider
        from . import writer

        recorder = self.recorder
        recorder.suspended = True
        try:
            counts, refused, _backup, created = writer.write(
                recorder,
                self.policy,
                self.target,
                environ=self.environ,
                default_provider=default_provider(),
            )
        except OSError as exc:
            _say(f"{self.tool}: learning: could not write {self.target}: {exc}; the rules were not saved")
            return
        for line in writer.summary(counts, refused, self.target, shown(self.target), created):
            _say(f"{self.tool}: {line}")


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class PartialLearning(Session):
    """Learning in partial mode: the child streams its facts into a journal file the host
    created (one JSON line each); the host writes the rules when the child stops."""

    def __init__(self, policy: Policy, environ: Mapping[str, str]) -> None:
        import tempfile

        super().__init__(policy, environ, tool="pysandboxes")
        fd, self.journal = tempfile.mkstemp(prefix="pysandboxes-learn-", suffix=".jsonl")
        os.close(fd)
        _say(banner(self.target, tool="pysandboxes").rstrip("\n"))

    def finish(self) -> None:
        if self.finished:
            return
        import json

        try:
            with open(self.journal, encoding="utf-8") as f:
                for line in f:
                    try:
                        fact = json.loads(line)
                    except ValueError:
                        continue  # a line cut short by a child that died while writing it
                    if isinstance(fact, list) and fact and isinstance(fact[0], str):
                        self.recorder.add(tuple(fact))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.journal)
        super().finish()
