"""``SandboxedPythonExecutor``: a ``CodeAgent``'s model-written code runs in the sandbox's child.

A ``CodeAgent`` hands each code action to its executor (``executor(code) -> CodeOutput``) after
``send_tools`` and ``send_variables`` at the start of a run. smolagents' local executor
interprets the code in the agent's process with an allow-list of imports and builtins; the
docker/e2b/modal executors run it in a remote kernel. This one runs smolagents' own interpreter
(``LocalPythonExecutor``: the same imports check, ``final_answer``, print capture) **in the
sandbox's child**, under the rule file: a file, socket, import or API the model's code reaches —
directly or through an allowed module, or through a tool it calls — is judged by the rules, and
the OS provider holds behind them. The interpreter and its variables live in the child, so the
state persists across steps (and runs) as with the local executor.

Tools: the code calls them in the child. A tool is found there by reference (the module and the
global it is bound to: the child imports that module, as for ``@sandbox`` functions) or, for a
module-level ``Tool`` subclass such as smolagents' ``FinalAnswerTool``, pickled.

What comes back is a value the result guard admits (``remote-result-mode=data-only``): other
outputs are given as their ``str()``. A refusal reaches the model as the step's error, the
denial's first line without the hint.
"""

from __future__ import annotations

import importlib
import logging
import pickle
import re
import sys
import threading
import uuid
from typing import TYPE_CHECKING, Any

from smolagents import CodeAgent, ToolCallingAgent
from smolagents.local_python_executor import CodeOutput, InterpreterError, LocalPythonExecutor, PythonExecutor
from smolagents.memory import ActionStep

from pysandboxes import SandBoxTimeoutError, denial_text, is_in_sandbox, sandbox, sandbox_denials
from pysandboxes.tools import sandboxes_for

from ._tool import STOPPED, SandboxStop, stop_on_refusal

if TYPE_CHECKING:
    from collections.abc import Callable

    from smolagents import Tool

    from pysandboxes import sandboxes

__all__ = ["SandboxedCodeAgent", "SandboxedPythonExecutor", "SandboxedToolCallingAgent"]

#: the ``executor_type`` of :class:`SandboxedCodeAgent`
EXECUTOR_TYPE = "pysandboxes"
#: what the model's logs say when the child was restarted (a crash, a limit) and lost the state
RESTARTED = "(the sandbox was restarted: the variables of earlier steps are lost)\n"

_log = logging.getLogger("Pysandboxes")


def _caller_module() -> str | None:
    """The application module that creates the agent: the first frame outside PySandboxes and
    smolagents (the agent's constructor creates the executor)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if not name.startswith(("pysandboxes", "smolagents")):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return None


# -- the child's side ------------------------------------------------------------------------

#: the interpreters of this child, by executor key
_INTERPRETERS: dict[str, LocalPythonExecutor] = {}
_DATA = (type(None), bool, int, float, complex, str, bytes)


def _crossing(value: Any, depth: int = 0) -> Any:
    """``value`` as the result guard admits it: plain data, anything else as its ``str()``."""
    kind = type(value)
    if kind in _DATA:
        return value
    if depth < 32:
        if kind in (list, tuple):
            return kind(_crossing(v, depth + 1) for v in value)
        if kind in (set, frozenset):
            return kind(_crossing(v, depth + 1) for v in value)
        if kind is dict:
            return {_crossing(k, depth + 1): _crossing(v, depth + 1) for k, v in value.items()}
    return str(value)


def _resolve(reference: tuple[str, str] | Tool) -> Any:
    if not isinstance(reference, tuple):
        return reference  # a picklable tool, unpickled by the call itself
    module, name = reference
    if module in ("__main__", "__mp_main__") and "__sb_main__" in sys.modules:
        module = "__sb_main__"  # a script's top level is imported under this name in the child
    found = sys.modules.get(module) or importlib.import_module(module)
    return getattr(found, name)


@sandbox
def _child_start(key: str, authorized_imports: list[str], max_print_outputs_length: int | None) -> None:
    # no timeout thread here: the call's own timeout= (the rule file's) bounds it
    _INTERPRETERS[key] = LocalPythonExecutor(
        authorized_imports, max_print_outputs_length=max_print_outputs_length, timeout_seconds=None
    )


@sandbox
def _child_send_tools(key: str, references: dict[str, tuple[str, str] | Tool]) -> bool:
    interpreter = _INTERPRETERS.get(key)
    if interpreter is None:
        return False
    interpreter.send_tools({name: _resolve(reference) for name, reference in references.items()})
    return True


@sandbox
def _child_send_variables(key: str, variables: dict[str, Any]) -> bool:
    interpreter = _INTERPRETERS.get(key)
    if interpreter is None:
        return False
    interpreter.send_variables(variables)
    return True


@sandbox
def _child_run(key: str, code: str) -> dict[str, Any] | None:
    interpreter = _INTERPRETERS.get(key)
    if interpreter is None:
        return None  # a new child: the host starts the interpreter again
    result = interpreter(code)
    return {"output": _crossing(result.output), "logs": result.logs, "final": result.is_final_answer}


@sandbox
def _child_logs(key: str) -> str:
    interpreter = _INTERPRETERS.get(key)
    return "" if interpreter is None else str(interpreter.state.get("_print_outputs", ""))


@sandbox
def _child_stop(key: str) -> None:
    _INTERPRETERS.pop(key, None)


# -- the host's side -------------------------------------------------------------------------


class SandboxedPythonExecutor(PythonExecutor):
    """A smolagents ``PythonExecutor`` whose code runs in the sandbox's child, under the rules.

    ``SandboxedPythonExecutor(additional_authorized_imports, logger=None, *,
    max_print_outputs_length=None, init_fn=None, sandboxes_config=None, **settings)``: the
    imports smolagents' interpreter allows (as ``CodeAgent(additional_authorized_imports=)``;
    an import also needs the rule file's ``python-import=``), and ``sandboxes()``'s arguments.
    The default rule file is the one next to the module that creates the agent (or the
    executor). The sandbox opens on first use and closes on :meth:`cleanup`
    (``CodeAgent.cleanup()``, ``with agent:``); without it, when Python exits.

    Use it as ``CodeAgent(..., executor=SandboxedPythonExecutor([...]))``, or through
    :class:`SandboxedCodeAgent`. Under ``python-sb`` the whole program is sandboxed already:
    the code is interpreted in the process.
    """

    def __init__(
        self,
        additional_authorized_imports: list[str] | None = None,
        logger: Any = None,
        *,
        max_print_outputs_length: int | None = None,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        _module: str | None = None,
        **settings: Any,
    ) -> None:
        self.additional_authorized_imports = list(additional_authorized_imports or [])
        self.logger = logger
        self.max_print_outputs_length = max_print_outputs_length
        self._module = _module if _module is not None else _caller_module()
        self._sandbox_args = (init_fn, sandboxes_config, settings)
        self._key = uuid.uuid4().hex
        self._lock = threading.RLock()
        self._block: sandboxes | None = None
        self._started = False
        self._tools: dict[str, tuple[str, str] | Tool] = {}
        self._variables: dict[str, Any] = {}
        #: the last code's print outputs (read by CodeAgent after an error)
        self.state: dict[str, Any] = {"_print_outputs": ""}
        # python-sb: the program is sandboxed as a whole; the interpreter runs here
        self._local = (
            LocalPythonExecutor(
                self.additional_authorized_imports, max_print_outputs_length=max_print_outputs_length
            )
            if is_in_sandbox()
            else None
        )

    # -- PythonExecutor ------------------------------------------------------------------------

    def send_tools(self, tools: dict[str, Tool]) -> None:
        if self._local is not None:
            self._local.send_tools(tools)
            return
        self._tools = {name: _reference(name, tool) for name, tool in tools.items()}
        with self._lock:
            self._start()
            _child_send_tools(self._key, self._tools)

    def send_variables(self, variables: dict[str, Any]) -> None:
        if self._local is not None:
            self._local.send_variables(variables)
            return
        self._variables.update(variables)
        with self._lock:
            self._start()
            _child_send_variables(self._key, variables)

    def __call__(self, code_action: str) -> CodeOutput:
        if self._local is not None:
            self.state = self._local.state
            try:
                return self._local(code_action)
            except Exception as exc:  # python-sb's refusals carry the hint too
                raise _for_the_model(exc) from exc
        with self._lock:
            self._start()
            prefix = ""
            try:
                result = _child_run(self._key, code_action)
                if result is None:  # the child was restarted since the last step
                    self._restore()
                    prefix = RESTARTED
                    result = _child_run(self._key, code_action)
                    assert result is not None
            except Exception as exc:
                self.state = {"_print_outputs": prefix + self._logs()}
                raise _for_the_model(exc) from exc
        logs = prefix + result["logs"]
        self.state = {"_print_outputs": logs}
        return CodeOutput(output=result["output"], logs=logs, is_final_answer=result["final"])

    def cleanup(self) -> None:
        """Forget the interpreter and leave the sandbox (the last block to leave stops it)."""
        with self._lock:
            block, self._block = self._block, None
            if block is None:
                return
            try:
                if self._started:
                    _child_stop(self._key)
            except Exception:  # a dead child: nothing left to forget
                pass
            finally:
                self._started = False
                block.__exit__(None, None, None)

    # -- the child -----------------------------------------------------------------------------

    def _start(self) -> None:
        if self._block is None:
            init_fn, config, settings = self._sandbox_args
            block = sandboxes_for(self._module, init_fn, config, **settings)
            block.__enter__()
            self._block = block
        if not self._started:
            _child_start(self._key, self.additional_authorized_imports, self.max_print_outputs_length)
            self._started = True

    def _restore(self) -> None:
        """A restarted child: the interpreter again, with the tools and the variables sent."""
        _log.warning(
            "pysandboxes-smolagents: the sandbox was restarted; the code's variables of earlier steps are lost"
        )
        _child_start(self._key, self.additional_authorized_imports, self.max_print_outputs_length)
        if self._tools:
            _child_send_tools(self._key, self._tools)
        if self._variables:
            _child_send_variables(self._key, self._variables)

    def _logs(self) -> str:
        try:
            return _child_logs(self._key)
        except Exception:
            return ""


def _reference(name: str, tool: Any) -> tuple[str, str] | Tool:
    """How the child finds ``tool``: the module global it is bound to, else the tool itself
    (pickled with the call)."""
    modules = [getattr(getattr(tool, "forward", None), "__module__", None), type(tool).__module__]
    for module_name in dict.fromkeys(m for m in modules if m):
        module = sys.modules.get(module_name)
        for attribute, value in vars(module).items() if module is not None else ():
            if value is tool:
                return (module_name, attribute)
    if isinstance(tool, CodeAgent) or hasattr(tool, "managed_agents"):
        raise TypeError(
            f"SandboxedPythonExecutor: {name!r} is a managed agent; managed agents are not supported "
            "by the sandboxed executor (as by smolagents' remote executors)"
        )
    try:
        pickle.dumps(tool)  # the call pickles it: say here what to do if it cannot
    except Exception as exc:
        raise TypeError(
            f"SandboxedPythonExecutor: the tool {name!r} runs in the sandbox's child, which finds it by "
            "module and name: define it at the top level of a module (`@sandboxed_tool` or `@tool` "
            "bound to a global), or make it an instance of a module-level Tool subclass"
        ) from exc
    return tool  # type: ignore[no-any-return]


def _for_the_model(exc: Exception) -> Exception:
    """The error the agent shows the model: a refusal as its first line (no hint, logged in
    full for the developer); anything else as smolagents' interpreter reports it."""
    message = str(exc)
    if isinstance(exc, SandBoxTimeoutError):  # its message names the rule file, for the developer
        within = re.search(r"within ([0-9.]+ s)", message)
        seconds = f" ({within.group(1)})" if within else ""
        return InterpreterError(
            f"Code execution did not finish within the time the sandbox allows{seconds}: it was cancelled"
        )
    if STOPPED in message:
        return SandboxStop(f"{message.partition(' due to: ')[0]} due to: {STOPPED}")
    if not sandbox_denials(exc):
        return exc if isinstance(exc, InterpreterError) else InterpreterError(message)
    head, found, _ = message.partition(" due to: ")
    text = denial_text(exc)
    return InterpreterError(f"{head} due to: {text}" if found else text)


class SandboxedCodeAgent(CodeAgent):
    """A ``CodeAgent`` whose ``executor_type`` defaults to ``"pysandboxes"``: the model's code
    runs in the sandbox's child (:class:`SandboxedPythonExecutor`), under the rule file next
    to the module that creates the agent. ``executor_kwargs`` go to the executor
    (``sandboxes_config=``, ``init_fn=``, rules such as ``expose_ro="./data"``). The other
    ``executor_type`` values are smolagents' own. The :func:`stop_on_refusal` step callback is
    added: a tool made with ``on_denial="raise"`` ends the run.
    """

    def __init__(self, *args: Any, executor_type: str = EXECUTOR_TYPE, **kwargs: Any) -> None:
        self._creator = _caller_module()
        super().__init__(*args, executor_type=executor_type, **kwargs)  # type: ignore[arg-type]
        self.step_callbacks.register(ActionStep, stop_on_refusal)

    def create_python_executor(self) -> PythonExecutor:
        if self.executor_type != EXECUTOR_TYPE:
            return super().create_python_executor()
        if self.managed_agents:
            raise ValueError("Managed agents are not yet supported with the pysandboxes executor.")
        return SandboxedPythonExecutor(
            self.additional_authorized_imports,
            self.logger,
            max_print_outputs_length=self.max_print_outputs_length,
            _module=self._creator,
            **self.executor_kwargs,
        )


class SandboxedToolCallingAgent(ToolCallingAgent):
    """A ``ToolCallingAgent`` whose every run is inside ``sandboxes()``: the sandbox of its
    ``@sandboxed_tool`` tools opens when ``run()`` starts and closes when it ends (or when a
    streamed run's generator is exhausted or closed), however it ends. ``sandboxes_kwargs`` are
    ``sandboxes()``'s (``sandboxes_config=``, ``init_fn=``, rules such as ``expose_ro=``); the
    default rule file is the one next to the module that creates the agent. Runs share one
    child; nested and concurrent ones join it, the last to end stops it. The
    :func:`stop_on_refusal` step callback is added: a tool made with ``on_denial="raise"`` ends
    the run.
    """

    def __init__(self, *args: Any, sandboxes_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self._creator = _caller_module()
        self.sandboxes_kwargs: dict[str, Any] = dict(sandboxes_kwargs or {})
        super().__init__(*args, **kwargs)
        self.step_callbacks.register(ActionStep, stop_on_refusal)

    def run(self, task: str, stream: bool = False, *args: Any, **kwargs: Any) -> Any:
        block = sandboxes_for(self._creator, **self.sandboxes_kwargs)
        if stream:
            return _inside(block, super().run(task, True, *args, **kwargs))
        with block:
            return super().run(task, stream, *args, **kwargs)


def _inside(block: sandboxes, events: Any) -> Any:
    with block:
        yield from events
