"""The tests every adapter passes: subclass :class:`AdapterConformance` in the adapter's tests."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pysandboxes import SandBoxError, sandbox_denials
from pysandboxes.tools import sandboxes_for

from . import _driver
from ._harness import Harness, Seen
from ._project import (
    ALLOWED_MODULE,
    ALLOWED_TEXT,
    ASYNC_TOOLS,
    CONTEXT_TOOLS,
    PROVIDER,
    REFUSED_MODULE,
    SECRET_TEXT,
    TOOLS,
    Project,
    module_name,
    project,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

    from ._harness import Call

#: the hint a refusal ends with, for the developer: never for the model
HINT = "Add `"
#: how long a process the suite starts may take (it imports a framework, twice)
RUN_TIMEOUT = 180


class Outcome:
    """What one run gave: what the model saw, or the exception that ended the run."""

    def __init__(self, seen: list[Seen] | None = None, error: BaseException | None = None) -> None:
        self.seen = seen
        self.error = error

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return self.seen == other.seen and _described(self.error) == _described(other.error)

    def __repr__(self) -> str:
        return f"Outcome(seen={self.seen!r}, error={_described(self.error)!r})"


def _described(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


class AdapterConformance:
    """The shared conformance suite. In ``integrations/<name>/tests/test_conformance.py``::

        from pysandboxes_conformance import AdapterConformance

        class TestConformance(AdapterConformance):
            pass

    with a ``harness`` fixture (returning the adapter's :class:`Harness`) in the tests'
    ``conftest.py``. Every test below then runs against the adapter.
    """

    # -- fixtures ------------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def project(cls, harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
        with project(tmp_path_factory.mktemp(f"conformance-{harness.name}"), harness) as made:
            yield made

    @pytest.fixture(scope="class")
    @classmethod
    def tools(cls, project: Project) -> Iterator[ModuleType]:
        """The adapter's tools module, with the sandbox open around the class's tests (one
        child: each test's lifecycle hook joins it instead of starting its own)."""
        module = importlib.import_module(project.tools_module)
        with sandboxes_for(project.tools_module):
            yield module
        # every lifecycle hook entered during the class left again: the sandbox is closed
        with pytest.raises(SandBoxError, match="called outside any sandbox"):
            module._body_pid("closed?")

    @pytest.fixture(scope="class")
    @classmethod
    def plain(cls, project: Project) -> ModuleType:
        """The same tools made by the framework alone: what the adapter must not change."""
        return importlib.import_module(project.plain_module)

    def run(self, harness: Harness, module: ModuleType, *calls: Call) -> list[Seen]:
        return harness.call_tools(module, calls)

    def outcome(self, harness: Harness, module: ModuleType, *calls: Call) -> Outcome:
        """A run that may end with an exception: without the lifecycle hook, whose end a run
        that raises never reaches (the class's sandbox is open anyway)."""
        try:
            return Outcome(seen=harness.call_tools(module, calls, lifecycle=False))
        except Exception as exc:
            return Outcome(error=exc)

    # -- the tool runs, in the child -----------------------------------------------------------

    def test_the_model_gets_the_tools_answer(
        self, harness: Harness, tools: ModuleType, plain: ModuleType
    ) -> None:
        assert self.run(harness, tools, ("add", {"a": 2, "b": 3})) == [Seen("5")]
        assert self.run(harness, plain, ("add", {"a": 2, "b": 3})) == [Seen("5")]

    def test_the_body_runs_in_one_child_for_the_whole_run(self, harness: Harness, tools: ModuleType) -> None:
        first, second = self.run(harness, tools, ("pid", {}), ("pid", {}))
        assert not first.error and first == second
        assert int(first.text) != os.getpid()

    def test_the_plain_tool_runs_in_the_host(self, harness: Harness, plain: ModuleType) -> None:
        assert self.run(harness, plain, ("pid", {})) == [Seen(str(os.getpid()))]

    def test_an_async_body_runs_in_the_same_child(self, harness: Harness, tools: ModuleType) -> None:
        if not harness.async_tools:
            pytest.skip(f"{harness.name} has no async tools")
        sync, async_ = self.run(harness, tools, ("pid", {}), ("async_pid", {"delay": 0.01}))
        assert not async_.error and async_ == sync
        assert int(async_.text) != os.getpid()

    # -- refusals reach the model as text, without the hint ------------------------------------

    def test_an_allowed_file_is_read(self, harness: Harness, tools: ModuleType, project: Project) -> None:
        assert self.run(harness, tools, ("read_text", {"path": project.allowed_file})) == [Seen(ALLOWED_TEXT)]

    def test_a_refused_file_is_text_for_the_model_without_the_hint(
        self, harness: Harness, tools: ModuleType, project: Project
    ) -> None:
        (seen,) = self.run(harness, tools, ("read_text", {"path": project.secret_file}))
        assert seen.error
        assert (
            f"RuleFileNotFoundError: Access to '{project.secret_file}' must be accepted by a rule."
            in seen.text
        )
        assert HINT not in seen.text and SECRET_TEXT.strip() not in seen.text

    def test_the_plain_tool_reads_the_refused_file(
        self, harness: Harness, plain: ModuleType, project: Project
    ) -> None:
        assert self.run(harness, plain, ("read_text", {"path": project.secret_file})) == [Seen(SECRET_TEXT)]

    def test_an_allowed_loopback_port_is_reached(
        self, harness: Harness, tools: ModuleType, project: Project
    ) -> None:
        port = project.allowed.port
        assert self.run(harness, tools, ("fetch_port", {"port": port})) == [Seen(project.allowed.greeting)]

    def test_a_refused_loopback_port_is_text_for_the_model_without_the_hint(
        self, harness: Harness, tools: ModuleType, project: Project
    ) -> None:
        (seen,) = self.run(harness, tools, ("fetch_port", {"port": project.refused.port}))
        assert seen.error
        assert (
            f"RuleSocketConnectionRefusedError: Connection to [127.0.0.1]:{project.refused.port} DENIED"
            in seen.text
        )
        assert HINT not in seen.text and project.refused.greeting not in seen.text

    def test_the_plain_tool_reaches_the_refused_port(
        self, harness: Harness, plain: ModuleType, project: Project
    ) -> None:
        port = project.refused.port
        assert self.run(harness, plain, ("fetch_port", {"port": port})) == [Seen(project.refused.greeting)]

    def test_an_allowed_import_works(self, harness: Harness, tools: ModuleType) -> None:
        assert self.run(harness, tools, ("load_module", {"name": ALLOWED_MODULE})) == [Seen(ALLOWED_MODULE)]

    def test_a_refused_import_is_text_for_the_model_without_the_hint(
        self, harness: Harness, tools: ModuleType
    ) -> None:
        (seen,) = self.run(harness, tools, ("load_module", {"name": REFUSED_MODULE}))
        assert seen.error
        assert (
            f"RuleModuleNotFoundError: Module named '{REFUSED_MODULE}' is not allowed by a rule" in seen.text
        )
        assert HINT not in seen.text

    def test_the_plain_tool_imports_the_refused_module(self, harness: Harness, plain: ModuleType) -> None:
        assert self.run(harness, plain, ("load_module", {"name": REFUSED_MODULE})) == [Seen(REFUSED_MODULE)]

    def test_on_denial_raise_leaves_the_refusal_to_the_framework(
        self, harness: Harness, tools: ModuleType, project: Project
    ) -> None:
        outcome = self.outcome(harness, tools, ("read_text_or_raise", {"path": project.secret_file}))
        if outcome.error is not None:  # the framework ends the run with the refusal
            assert sandbox_denials(outcome.error), outcome
        elif harness.sends_exception_messages:  # the first line, as with "text": no hint
            assert outcome.seen is not None and outcome.seen[0].error
            assert "must be accepted by a rule" in outcome.seen[0].text
            assert HINT not in outcome.seen[0].text
        else:  # the framework reports an unexpected error its own way, not with our text
            assert outcome.seen is not None and outcome.seen[0].error
            assert "must be accepted by a rule" not in outcome.seen[0].text

    def test_other_exceptions_keep_the_frameworks_handling(
        self, harness: Harness, tools: ModuleType, plain: ModuleType
    ) -> None:
        call = ("fail", {"message": "no such page"})
        assert self.outcome(harness, tools, call) == self.outcome(harness, plain, call)

    # -- what the framework sees ---------------------------------------------------------------

    @pytest.mark.parametrize("tool", TOOLS)
    def test_the_schema_is_the_plain_tools(
        self, harness: Harness, tools: ModuleType, plain: ModuleType, tool: str
    ) -> None:
        if tool in CONTEXT_TOOLS:
            _needs_context(harness)
        if tool in ASYNC_TOOLS and not harness.async_tools:
            pytest.skip(f"{harness.name} has no async tools")
        assert harness.schema(tools, tool) == harness.schema(plain, tool)

    def test_the_context_parameter_stays_on_the_host(self, harness: Harness, tools: ModuleType) -> None:
        _needs_context(harness)
        (seen,) = self.run(harness, tools, ("context_default", {"text": "hi"}))
        text, _, pid = seen.text.rpartition(" pid=")
        assert (text, seen.error) == ("hi context=none", False)
        assert int(pid) != os.getpid()

    def test_the_plain_tool_gets_the_context(self, harness: Harness, plain: ModuleType) -> None:
        _needs_context(harness)
        (seen,) = self.run(harness, plain, ("context_default", {"text": "hi"}))
        assert seen.text == f"hi context={_type_name(harness)} pid={os.getpid()}"

    def test_a_host_tool_uses_the_context_and_sandboxes_its_body(
        self, harness: Harness, tools: ModuleType
    ) -> None:
        _needs_context(harness)
        (seen,) = self.run(harness, tools, ("context_host", {"text": "hi"}))
        head, _, body = seen.text.rpartition(" body=")
        assert (head, seen.error) == (f"context={_type_name(harness)} host={os.getpid()} hi", False)
        assert int(body) != os.getpid()

    # -- decoration ----------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def decorations(cls, harness: Harness, project: Project) -> dict[str, tuple[str, str]]:
        """Each wrong usage imported in a fresh process: module -> (words expected, outcome)."""
        header = textwrap.dedent(harness.sandboxed_header).strip()
        generic = [
            (
                f'{harness.sandboxed}\ndef pages(n: int):\n    """Yield pages."""\n    yield n\n',
                "is a generator",
            ),
        ]
        if harness.context is not None:  # wrong_0: the context parameter without a default
            name, annotation = harness.context
            generic.insert(
                0,
                (
                    f"{harness.sandboxed}\ndef needs_context(text: str, {name}: {annotation}) -> str:\n"
                    f'    """Needs the context object itself."""\n    return text\n',
                    harness.host,
                ),
            )
        modules = []
        for index, (source, words) in enumerate([*generic, *harness.wrong_usages]):
            module = module_name(harness, f"wrong_{index}")
            project.write(
                f"{module}.py",
                f"from __future__ import annotations\n\nfrom pysandboxes import sandbox\n{header}\n\n"
                f"{textwrap.dedent(source)}",
            )
            modules.append((module, words))
        report = run_driver(project, {"mode": "imports", "modules": [m for m, _ in modules]})
        return {module: (words, report["outcomes"][module]) for module, words in modules}

    def test_a_context_parameter_without_default_is_refused_at_decoration(
        self, harness: Harness, decorations: dict[str, tuple[str, str]]
    ) -> None:
        _needs_context(harness)
        assert harness.context is not None
        words, outcome = decorations[module_name(harness, "wrong_0")]
        assert outcome.startswith("TypeError: ") and words in outcome, outcome
        assert f"`{harness.context[0]}: " in outcome and "@sandbox" in outcome

    def test_wrong_usages_fail_at_decoration_naming_the_fix(
        self, decorations: dict[str, tuple[str, str]]
    ) -> None:
        wrong = {
            module: (words, outcome)
            for module, (words, outcome) in decorations.items()
            if not (outcome.startswith("TypeError: ") and words in outcome)
        }
        assert not wrong

    # -- lifecycle, in a fresh process ---------------------------------------------------------

    def test_without_an_open_sandbox_the_first_call_opens_one(
        self, harness: Harness, project: Project
    ) -> None:
        report = run_driver(project, _calls(project, lifecycle=False))
        (first, _), (second, _) = report["seen"]
        assert first == second and int(first) != report["pid"]
        assert (
            f"INFO Pysandboxes: pysandboxes-{harness.name}: no sandbox was open for pid(): started one "
            f"with {project.rule_file} (os-sandbox={PROVIDER})" in report["stderr"]
        )
        assert report["after"] == f"after body={first}"  # still open: until Python exits

    def test_the_lifecycle_hook_opens_the_sandbox_for_the_run(
        self, harness: Harness, project: Project
    ) -> None:
        if not harness.has_lifecycle:
            pytest.skip(f"{harness.name} has no lifecycle hook: the first call opens the sandbox")
        report = run_driver(project, _calls(project, lifecycle=True))
        (first, _), (second, _) = report["seen"]
        assert first == second and int(first) != report["pid"]
        assert "no sandbox was open" not in report["stderr"]
        assert (
            report["after"].startswith("SandBoxError: ") and "called outside any sandbox" in report["after"]
        )

    def test_under_python_sb_the_body_runs_directly(self, harness: Harness, project: Project) -> None:
        exposed = [project.root, Path(_harness_file(harness)).parent, *_package_dirs(harness)]
        complete = project.write(
            ".py-sandboxes-complete",
            f"os-sandbox={PROVIDER}\n"
            + "".join(f"expose-ro={directory}\n" for directory in exposed)
            + "python-import=*\npython-api=ALLOW:threads\n"
            + harness.complete_rules,
        )
        report = run_driver(project, _calls(project, lifecycle=True), complete=complete)
        assert report["seen"] == [[str(report["pid"]), False], [str(report["pid"]), False]]
        assert report["after"] == f"after body={report['pid']}"


def _needs_context(harness: Harness) -> None:
    if harness.context is None:
        pytest.skip(f"{harness.name} has no context parameter (Harness.context = None)")


def _type_name(harness: Harness) -> str:
    assert harness.context is not None
    return harness.context[1].partition("[")[0].rpartition(".")[2]


def _harness_file(harness: Harness) -> str:
    module = sys.modules[type(harness).__module__]
    return str(module.__file__)


def _package_dirs(harness: Harness) -> list[str]:
    """Where the adapter and this suite live (outside the environment when installed editable)."""
    import importlib.util

    directories = []
    for name in (f"pysandboxes_{harness.name.replace('-', '_')}", __package__):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            directories.append(str(Path(next(iter(spec.submodule_search_locations))).parent))
    return directories


def _calls(project: Project, *, lifecycle: bool) -> dict[str, Any]:
    return {
        "mode": "calls",
        "module": project.tools_module,
        "calls": [["pid", {}], ["pid", {}]],
        "lifecycle": lifecycle,
    }


def run_driver(project: Project, spec: dict[str, Any], *, complete: Path | None = None) -> dict[str, Any]:
    """Run the driver in a fresh process in the project (under ``python-sb`` with the rule file
    ``complete``); its JSON report, with its standard error under ``"stderr"``."""
    harness = project.harness
    spec = {**spec, "harness_file": _harness_file(harness), "harness_class": type(harness).__qualname__}
    spec_file = project.write(f"spec-{os.getpid()}-{spec['mode']}.json", json.dumps(spec))
    driver = ["-m", _driver.__name__, str(spec_file)]
    if complete is None:
        argv = [sys.executable, *driver]
    else:
        argv = [str(Path(sys.executable).with_name("python-sb")), f"--pysandboxes-config={complete}", *driver]
    done = subprocess.run(
        argv,
        cwd=project.root,
        env=project.environ(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    report: dict[str, Any] = json.loads(lines[-1])
    report["stderr"] = done.stderr
    return report


__all__ = ["AdapterConformance", "Outcome", "run_driver"]
