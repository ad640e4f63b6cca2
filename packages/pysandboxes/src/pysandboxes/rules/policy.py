"""The compiled, immutable policy: what guards and providers ask, never parse."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .._record import Record
from ..errors import RuleProblem
from .api import ApiDecision, ApiPolicy
from .context import Rule
from .environment import EnvPolicy
from .evaluation import EvalProfile
from .files import FileDecision, FilePolicy
from .network import NetDecision, NetPolicy
from .origin import Origin

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar


class Setting(Record):
    """A singleton value and the rule that set it (None: the default)."""

    __slots__ = ("rule", "value")
    value: object
    rule: Rule | None


class Include(Record):
    """An include line: the path as written, where it points, whether the file was there."""

    __slots__ = ("origin", "path", "present", "written")
    written: str
    path: str
    origin: Origin
    present: bool


class Policy(Record):
    #: the rule file in use (None when the rules come from the built-in template)
    __slots__ = (
        "api",
        "env",
        "eval_profiles",
        "files",
        "files_policy",
        "imports",
        "includes",
        "learn_target",
        "limits",
        "locked_by",
        "main_file",
        "missing_includes",
        "net",
        "notes",
        "os_sandbox",
        "port",
        "provider_options",
        "py_sandbox",
        "remote_max_payload",
        "remote_result_guard",
        "remote_result_mode",
        "rules",
        "timeout",
    )
    _defaults: ClassVar[dict[str, Any]] = {"notes": ()}
    main_file: str | None
    #: every file read: the main file then each include, in reading order
    files: tuple[str, ...]
    #: includes that were looked for and are absent: sandboxed code must never create them
    missing_includes: tuple[str, ...]
    #: every include line met, present or not
    includes: tuple[Include, ...]
    #: every rule, in reading order (files, then command line or code)
    rules: tuple[Rule, ...]

    py_sandbox: Setting  # bool
    os_sandbox: Setting  # provider name, or None when the file does not say
    learn_target: str | None  # learning mode: the file that will receive the learned rules
    locked_by: Rule | None  # the 'learn=false' line that locks these rules
    remote_result_mode: Setting  # "data-only" | "objects"
    remote_result_guard: Setting  # bool
    remote_max_payload: Setting  # int: bytes a call's arguments or result may take
    timeout: Setting  # float seconds or None: a @sandbox call's wall-clock limit (partial mode)
    #: limit-cpu (seconds), -memory, -file-size, -output (bytes), -processes, -open-files:
    #: each a Setting whose value is None when the key is absent
    limits: Mapping[str, Setting]
    port: Setting  # accepted for compatibility; the transport uses no TCP port

    files_policy: FilePolicy
    net: NetPolicy
    env: EnvPolicy
    imports: Mapping[str, Rule]  # top-level name -> rule; "*" allows every import
    api: ApiPolicy
    eval_profiles: Mapping[str, EvalProfile]
    provider_options: Mapping[str, Mapping[str, Setting]]
    #: remarks that do not stop the load (shown by `pysandboxes check`)
    notes: tuple[RuleProblem, ...]

    # -- questions guards and providers ask -------------------------------------------------

    @property
    def learning(self) -> bool:
        return self.learn_target is not None

    @property
    def environment(self) -> Mapping[str, str]:
        """The environment the sandboxed program starts with."""
        return self.env.values

    def decide_open(self, path: str, *, write: bool = False) -> FileDecision:
        return self.files_policy.decide(path, write=write)

    def decide_connect(
        self, address: str, port: int, protocol: str = "tcp", direction: str = "out"
    ) -> NetDecision:
        return self.net.decide(address, port, protocol, direction)

    def decide_import(self, top_level: str) -> Rule | None:
        """The rule allowing this top-level module, or None when no rule does."""
        return self.imports.get(top_level) or self.imports.get("*")

    def decide_api(self, function: str) -> ApiDecision:
        return self.api.decide(function)

    def options_for(self, provider: str) -> Mapping[str, object]:
        return {k: s.value for k, s in self.provider_options.get(provider, {}).items()}

    def pin_hostnames(self, resolve: Callable[[str], Iterable[str] | None]) -> Policy:
        """A copy whose ``net=`` host names are resolved once and pinned (see NetPolicy)."""
        return self._replace(net=self.net.pin_hostnames(resolve))

    @property
    def lock_origin(self) -> Origin | None:
        return self.locked_by.origin if self.locked_by else None
