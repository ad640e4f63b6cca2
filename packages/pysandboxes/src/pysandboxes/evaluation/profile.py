"""An ``EvalProfile`` of the rule language, compiled for the engine: name matchers, the
builtins its evaluations see, its parse cache. One per profile, built on first use."""

from __future__ import annotations

import builtins
import fnmatch
import re
from collections import OrderedDict

from ..rules.eval_vocab import CORE_NODES, NEVER_BY_PATTERN
from ..rules.evaluation import EvalProfile, Grants
from .cost import max_str_digits
from .vocab import ALWAYS_NAMES_EXTRA, NEVER_CALLS, NEVER_IMPORTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: parse/check/rewrite results kept per profile (least recently used dropped first)
CACHE_SIZE = 256


def _glob(pattern: str) -> Any:
    return re.compile(fnmatch.translate(pattern)).match


class Matcher:
    """``allow`` minus ``deny`` of one ``eval-*`` list key; ``*`` patterns allowed.

    ``unpatterned``: names a pattern never grants (only an exact grant does); with
    ``private`` set, neither do names starting with ``_``.
    """

    __slots__ = ("_allow", "_deny", "_deny_patterns", "_patterns", "_private", "_unpatterned", "empty")

    def __init__(self, grants: Grants, unpatterned: frozenset[str] = frozenset(), private: bool = False):
        self._allow = frozenset(n for n in grants.allow if "*" not in n)
        self._patterns = tuple(_glob(n) for n in sorted(grants.allow) if "*" in n)
        self._deny = frozenset(n for n in grants.deny if "*" not in n)
        self._deny_patterns = tuple(_glob(n) for n in sorted(grants.deny) if "*" in n)
        self._unpatterned = unpatterned
        self._private = private
        self.empty = not grants.allow

    def __call__(self, name: str) -> bool:
        if name in self._deny or any(p(name) for p in self._deny_patterns):
            return False
        if name in self._allow:
            return True
        if name in self._unpatterned or (self._private and name.startswith("_")):
            return False
        return any(p(name) for p in self._patterns)

    def exact(self) -> frozenset[str]:
        return self._allow - self._deny


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


#: builtin exception classes and constants: every evaluation sees them
ALWAYS_NAMES = frozenset(
    n
    for n in dir(builtins)
    if (isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException))
    or n in ALWAYS_NAMES_EXTRA
)
BUILTIN_NAMES = frozenset(dir(builtins))


class Compiled:
    """The engine's view of one profile."""

    def __init__(self, profile: EvalProfile) -> None:
        self.profile = profile
        self.label = profile.name or "default"
        nodes = (set(CORE_NODES) | set(profile.syntax.allow)) - set(profile.syntax.deny)
        self.nodes = frozenset(nodes)
        self.calls = Matcher(profile.calls)
        self.attributes = Matcher(profile.attributes, NEVER_BY_PATTERN, private=True)
        self.imports = Matcher(profile.imports)
        self.magic = Matcher(profile.magic)
        #: ``eval-call=module.name`` grants: root name -> granted dotted names / patterns
        self.dotted = tuple(sorted(n for n in profile.calls.allow if "." in n))
        self.cache: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._builtins: dict[str, Any] | None = None
        self.stateful: tuple[str, ...] = ()
        #: the largest ``sys.get_int_max_str_digits()`` its evaluations run under
        self.max_str_digits = max_str_digits(profile.timeout)

    # -- questions the checker and the runtime ask --------------------------------------------

    def call_granted(self, name: str) -> bool:
        return name not in NEVER_CALLS and self.calls(name)

    def import_granted(self, dotted: str) -> bool:
        top = dotted.partition(".")[0]
        return top not in NEVER_IMPORTS and self.imports(dotted)

    def dotted_granted(self, path: str) -> bool:
        """``path`` (``math.sqrt``, or ``os.path`` on the way to ``os.path.join``) is named by
        an ``eval-call=module.name`` grant."""
        if self.calls(path):
            return True
        prefix = path + "."
        return any(g.startswith(prefix) or (g.split(".")[0] == path and "*" in g) for g in self.dotted)

    def attribute_granted(self, name: str) -> bool:
        if is_dunder(name):
            return self.magic(name)
        return self.attributes(name)

    def builtins(self) -> dict[str, Any]:
        """The shared ``__builtins__`` of this profile's evaluations (never reachable by the
        evaluated code: ``__builtins__`` is always refused); stateful shims come per run."""
        if self._builtins is None:
            from . import runtime

            self._builtins, self.stateful = runtime.build_builtins(self)
        return self._builtins


_COMPILED: dict[int, tuple[EvalProfile, Compiled]] = {}


def compiled(profile: EvalProfile) -> Compiled:
    found = _COMPILED.get(id(profile))
    if found is not None and found[0] is profile:
        return found[1]
    made = Compiled(profile)
    if len(_COMPILED) > 64:
        _COMPILED.clear()
    _COMPILED[id(profile)] = (profile, made)
    return made
