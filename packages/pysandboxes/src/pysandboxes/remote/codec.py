"""The partial-mode codec: values and exceptions between the host and the sandboxed child.

Arguments go host → child and are trusted (:func:`loads_trusted` is plain ``pickle``).
Results and exceptions come back child → host and are **not** trusted: the child may be
running hostile code, and unpickling calls whatever a pickle names. They go through the
result guard (:func:`loads_result`):

* a **prescan** steps over the opcodes (executing nothing) and refuses what the C unpickler
  would turn into damage: a ``PUT``/``LONG_BINPUT`` memo index sizes an array (six bytes
  allocate gigabytes), ``EXT*`` codes found in ``copyreg``'s cache skip ``find_class``, a
  frame is read whole. It also says what the pickle builds: dicts or sets, and keys a child
  can aim at one hash (tuples, frozensets, objects, floats, large ints). It runs when a byte
  of such an opcode occurs in the payload (no byte, no opcode) or the payload is large;
* **bounded work**: decoding stays proportional to the result's size, whatever the child
  wrote. A pickle whose dict and set keys could be aimed is decoded by a pure-Python
  unpickler that checks each key before the container takes it (:class:`_Guarded`: more than
  ``_MAX_REPEATS`` keys sharing a hash are refused), and hashing, constructor calls and
  ``BUILD`` are paid out of a budget of a few units per byte (:class:`_Budget`); other
  pickles take the C unpickler. Past the call's deadline decoding stops (:class:`LateResult`);
* ``remote-result-mode=data-only`` (default): ``find_class`` resolves a closed list of value
  classes, only from modules the host has already loaded (it never imports), and hands out a
  per-load constructor (:class:`_Maker`) instead of the class: ``BUILD`` on it is refused
  (on a class it would set class attributes for the whole host), ``NEWOBJ`` on it fails. The
  instances it builds are put back to their state at construction after the load (a
  ``BUILD`` could set slots such as ``PurePath._str``), then the value is walked: exact
  types only, nesting ≤ ``max_depth``, shared and cyclic parts examined once;
* ``remote-result-mode=objects``: any class resolvable from a module the host has loaded,
  minus a denylist (processes, files, imports, network, threads, pickling, callables that
  call callables, introspection; builtins other than value types; metaclasses; exceptions),
  never a function, method or module. Fail-open by design: a class's constructor runs with
  arguments chosen by the child. A pickle that builds on a class or an enum member it
  resolved is refused and the change undone;
* ``remote-result-guard=false`` (objects mode only): plain ``pickle.loads`` after the
  prescan.

Exceptions travel as a *description* made of plain values (:func:`encode_exception`),
decoded with the data-only guard. :func:`decode_exception` rebuilds builtin exceptions,
PySandboxes' own, and ``Exception`` subclasses of modules the host has loaded, else a
:class:`~pysandboxes.errors.SandBoxRemoteError`. The child's frames travel as *text*: file,
line, function and the source line, read in the child under its rules; the host shows them
in a note and builds no frame object, so no traceback printer of the host ever opens a file
the child named (the child names any file it likes, and writes any frame it likes: its
channel is a descriptor of its own process).
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import stat
import sys
import time
import types
from operator import is_ as _is

from ..errors import (
    SandBoxBaseExceptionError,
    SandBoxError,
    SandBoxProtocolError,
    SandBoxRemoteError,
    SandBoxTimeoutError,
    _own_denials,
    sandbox_denials,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = [
    "LateResult",
    "RestrictedUnpicklingError",
    "decode_exception",
    "dumps",
    "encode_exception",
    "loads_result",
    "loads_trusted",
]

PROTOCOL = 5
DATA_ONLY = "data-only"
OBJECTS = "objects"

_MAX_EXCEPTIONS = 16  # exceptions in one description: the raised one, causes, contexts, members
_MAX_FRAMES = 1000  # traceback entries per exception
_MAX_MESSAGE = 64 * 1024  # characters of str(exception)
_MAX_ARGS = 256 * 1024  # bytes of pickled exception args / state
_MAX_NAME = 4096  # characters of a module, class, file or function name
_MAX_SOURCE = 1000  # characters of a source line in a traceback
_MAX_NOTES = 64

# Bound now: in the child the guards later replace ``pickle.loads`` for the program.
_loads = pickle.loads
_dumps = pickle.dumps


class RestrictedUnpicklingError(SandBoxError, pickle.UnpicklingError):
    """The result guard refused what the sandboxed child sent back.

    Raised for a class outside ``remote-result-mode``, a value the data-only walk refuses,
    a result nested deeper than the limit, or a malformed pickle.
    """


# -- host → child, and what the child sends back ---------------------------------------------


def dumps(
    value: object, *, max_size: int, direction: str = "to the sandbox"
) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Pickle ``value`` (protocol 5) with its out-of-band buffers, at most ``max_size`` bytes.

    Only objects that offer a :class:`pickle.PickleBuffer` travel out of band. An oversized
    or unpicklable value raises :class:`SandBoxProtocolError` naming the culprit's type and
    why; ``direction`` completes "cannot send ... " (``"back from the sandbox"`` in the child).
    """
    buffers: list[pickle.PickleBuffer] = []
    try:
        data = _dumps(value, PROTOCOL, buffer_callback=buffers.append)
    except Exception as exc:
        raise SandBoxProtocolError(_unpicklable_message(value, exc, direction)) from exc
    size = len(data)
    if buffers:
        try:
            size += sum(buffer.raw().nbytes for buffer in buffers)
        except (BufferError, ValueError) as exc:
            raise SandBoxProtocolError(
                f"cannot send {_describe(value)} {direction}: one of its buffers is not contiguous ({exc})"
            ) from exc
    if size > max_size:
        raise SandBoxProtocolError(
            f"cannot send {_describe(value)} {direction}: {size} bytes exceeds remote-max-payload={max_size}"
        )
    return data, buffers


def loads_trusted(data: bytes | bytearray | memoryview, buffers: Iterable[Any] | None = None) -> Any:
    """Host → child: the host is trusted, plain ``pickle``."""
    return _loads(data, buffers=buffers)


class _Tracer(pickle.Pickler):
    """Records the last object pickle started on: the culprit when pickling fails."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), PROTOCOL, buffer_callback=_drop)
        self.last: object = None

    def persistent_id(self, obj: Any) -> None:
        self.last = obj
        return None


def _drop(_buffer: object) -> bool:
    return False


def _unpicklable_message(value: object, exc: BaseException, direction: str) -> str:
    culprit: object = value
    if not isinstance(exc, RecursionError):
        tracer = _Tracer()
        try:
            tracer.dump(value)
        except Exception:  # expected: the same failure; the tracer saw the culprit
            culprit = tracer.last
    return f"cannot send {_describe(culprit)} {direction}: {_why(culprit, exc)}"


def _type_name(cls: type) -> str:
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", None) or getattr(cls, "__name__", "?")
    return str(name) if module in (None, "builtins") else f"{module}.{name}"


def _describe(obj: object) -> str:
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        return str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?"))
    return f"a {_type_name(type(obj))} object"


def _why(culprit: object, exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "the value is nested too deeply to be pickled"
    qualname = str(getattr(culprit, "__qualname__", ""))
    if isinstance(culprit, (types.FunctionType, type)) and ("<locals>" in qualname or "<lambda>" in qualname):
        return (
            "functions and classes defined inside functions (and lambdas) cannot be pickled; "
            "define them at module level, or send data instead"
        )
    if isinstance(culprit, (types.FunctionType, type)):
        return (
            f"functions and classes travel by reference and {qualname} cannot be found in its module "
            f"({type(exc).__name__}: {exc})"
        )
    if isinstance(culprit, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return "generators and coroutines cannot be pickled; send a list (or the data they produce)"
    return f"{type(exc).__name__}: {exc}"


# -- the prescan -------------------------------------------------------------------------------
# Opcode → how to step over it: a positive number is the opcode's size (1 + its fixed argument);
# the others are (literal in the loop, which runs once per opcode):
#   -1 argument up to a newline   -2 two lines (GLOBAL, INST)   -3 1-byte length, then data
#   -4 4-byte signed length       -5 4-byte length              -6 8-byte length
#   -7 STOP                       -8 PUT (decimal index)        -9 LONG_BINPUT (4-byte index)
#  -10 EXT1/2/4                  -11 not an opcode             -12 BUILD
#  -13 one byte that tells what the pickle builds (_FLAGS)     -14 BINFLOAT
#  -15 FRAME                     -16 a number up to a newline  -17 LONG1   -18 LONG4
_LAYOUT: dict[bytes, int] = {
    **dict.fromkeys([b"S", b"V", b"g", b"P"], -1),
    **dict.fromkeys([b"I", b"L", b"F"], -16),
    **dict.fromkeys([b"c", b"i"], -2),
    **dict.fromkeys([b"U", b"C", b"\x8c"], -3),
    b"\x8a": -17,
    b"T": -4,
    b"\x8b": -18,
    **dict.fromkeys([b"B", b"X"], -5),
    **dict.fromkeys([b"\x8e", b"\x8d", b"\x96"], -6),
    b".": -7,
    b"p": -8,
    b"r": -9,
    b"b": -12,
    **dict.fromkeys([b"\x82", b"\x83", b"\x84"], -10),
    **dict.fromkeys([b"K", b"h", b"q", b"\x80"], 2),
    b"M": 3,
    **dict.fromkeys([b"J", b"j"], 5),
    b"G": -14,
    b"\x95": -15,
    **dict.fromkeys(
        [b"\x97", b"\x98", b"N", b"\x88", b"\x89", b"]", b"a", b")", b"0", b"2", b"\x94", b"R", b"Q",
         b"(", b"e", b"l", b"1"],
        1,
    ),
    **dict.fromkeys(
        [b"}", b"d", b"s", b"u", b"\x8f", b"\x90", b"\x91", b"t", b"\x85", b"\x86", b"\x87", b"\x93",
         b"o", b"\x81", b"\x92"],
        -13,
    ),
}  # fmt: skip
_STEP: tuple[int, ...] = tuple(_LAYOUT.get(bytes([b]), -11) for b in range(256))

# What a pickle builds, as far as the result guard cares (see _load_data_only):
_BUILDS = 1  # BUILD: sets the state of an object it built
_HASHES = 2  # dicts and sets: each key is hashed, and compared with every key of the same hash
_COMPOSITE = 4  # tuples, frozensets, objects of value classes: keys whose hash a child can aim
_FLOATS = 8  # floats: at most a few hundred share a hash (a float's hash is its value mod 2**61-1)
_BIGINTS = 16  # ints of 56 bits or more (and text numbers): any number of them share a hash
_FLAGS: tuple[int, ...] = tuple(
    (_HASHES if bytes([b]) in b"}dsu\x8f\x90\x91" else 0)
    | (_COMPOSITE if bytes([b]) in b"\x91t\x85\x86\x87\x93o\x81\x92" else 0)
    for b in range(256)
)
#: the bytes without which no opcode hashes, builds on an object or has to be looked at
_WATCHED = bytes(b for b in range(256) if _FLAGS[b] or b in b"bpr")
#: the largest frame accepted: the pickler makes them about 64 KiB, a large string goes outside
_MAX_FRAME = 256 * 1024
#: the prescan looks at the clock each time it has stepped over this many bytes
_WINDOW = 1 << 20


def _needs_prescan(data: bytes) -> bool:
    """Whether an opcode the prescan must see can occur at all: if the byte is absent, so is
    the opcode. ``EXT*`` can only resolve something when an extension is registered."""
    if len(data.translate(None, _WATCHED)) != len(data):  # one pass: a watched byte is there
        return True
    registered = copyreg._inverted_registry or copyreg._extension_cache  # type: ignore[attr-defined]
    return bool(registered) and (b"\x82" in data or b"\x83" in data or b"\x84" in data)


def _prescan(data: bytes, deadline: float | None = None) -> int:
    """Step over the opcodes without executing any; refuse memo bombs, extension codes and
    oversized frames; say what the pickle builds (``_BUILDS`` | ``_HASHES`` | ...).

    Only what the C unpickler would turn into damage is refused: a ``PUT``/``LONG_BINPUT``
    index sizes its memo array (``LONG_BINPUT 2**28`` allocates and clears 4 GiB), ``EXT*``
    codes found in ``copyreg``'s cache skip ``find_class``, and a frame is read whole (the
    decoder looks at the clock between frames). Everything else the unpickler checks itself,
    and the data-only walk bounds the nesting.
    """
    step = _STEP
    flags_of = _FLAGS
    end = len(data)
    i = 0
    flags = 0
    # Windows of a MiB: the clock is read between two (a hostile pickle is a billion opcodes).
    limit = end if deadline is None else min(end, _WINDOW)
    while True:
        while i < limit:
            op = data[i]
            k = step[op]
            if k > 0:
                i += k
                continue
            i += 1
            if k == -13:
                flags |= flags_of[op]
            elif k in (-3, -17):
                if i >= end:
                    break
                if k == -17 and data[i] >= 8:
                    flags |= _BIGINTS
                i += 1 + data[i]
            elif k in (-1, -8, -16):
                nl = data.find(b"\n", i)
                if nl < 0:
                    break
                if k == -8:
                    _check_memo_index(_decimal_prefix(data[i:nl]), i)
                elif k == -16:
                    flags |= _BIGINTS
                i = nl + 1
            elif k in (-4, -5, -6, -18):
                width = 8 if k == -6 else 4
                size = int.from_bytes(data[i : i + width], "little", signed=k in (-4, -18))
                if size < 0 or i + width + size > end:
                    break
                if k == -18:
                    flags |= _BIGINTS
                i += width + size
            elif k == -14:
                flags |= _FLOATS
                i += 8
            elif k == -9:
                _check_memo_index(int.from_bytes(data[i : i + 4], "little"), i)
                i += 4
            elif k == -2:
                flags |= _COMPOSITE
                nl = data.find(b"\n", i)
                nl = data.find(b"\n", nl + 1) if nl >= 0 else -1
                if nl < 0:
                    break
                i = nl + 1
            elif k == -15:
                if int.from_bytes(data[i : i + 8], "little") > _MAX_FRAME:
                    raise RestrictedUnpicklingError(
                        f"malformed result: a frame of more than {_MAX_FRAME} bytes (the pickler makes "
                        "them about 64 KiB)"
                    )
                i += 8
            elif k == -12:
                flags |= _BUILDS
            elif k == -7:
                return flags
            elif k == -10:
                raise RestrictedUnpicklingError(
                    "malformed result: pickle extension codes (EXT1/2/4) are refused"
                )
            else:
                raise RestrictedUnpicklingError(
                    f"malformed result: unknown opcode {data[i - 1]:#04x} at byte {i - 1}"
                )
        else:
            if i < end:  # the next window
                _check_deadline(deadline)
                limit = min(end, i + _WINDOW)
                continue
        break  # past the end without STOP, or an argument runs past it
    raise RestrictedUnpicklingError("malformed result: the pickle is truncated")


def _decimal_prefix(line: bytes) -> int:
    """The index the C unpickler reads from a ``PUT`` line (it stops at a NUL byte)."""
    try:
        return int(line.split(b"\0", 1)[0])
    except ValueError:
        return -1  # refused by the unpickler too


def _check_memo_index(index: int, position: int) -> None:
    # A pickler numbers memo entries from 0, one per opcode at most: an index never exceeds
    # the bytes read so far, and the memo array stays proportional to the payload.
    if index > position:
        raise RestrictedUnpicklingError(f"malformed result: memo index {index} is out of range")


# -- data-only ---------------------------------------------------------------------------------
# The closed list of value classes (module, name) → the check their constructor arguments
# pass. Each is resolved from ``sys.modules`` (never imported). Protocol 5 builds sets,
# frozensets and bytearrays with opcodes: their names are not needed (``bytearray(10**12)``
# would be a memory bomb), and ``uuid.SafeUUID`` is not either (a UUID carries its value).


def _fraction_args(args: tuple[object, ...]) -> None:
    # ``Fraction("1e999999999")`` computes 10**999999999: only the forms pickle writes pass.
    if len(args) == 1 and type(args[0]) is str:
        text = args[0]
        head, _, tail = text.removeprefix("-").partition("/")
        if head.isascii() and head.isdigit() and (not tail or (tail.isascii() and tail.isdigit())):
            return
    elif 1 <= len(args) <= 2 and all(type(a) is int for a in args):
        return
    raise RestrictedUnpicklingError(
        "fractions.Fraction arguments are refused: a numerator/denominator is expected"
    )


_VALUE_CLASSES: dict[tuple[str, str], Callable[[tuple[object, ...]], None] | None] = {
    ("builtins", "complex"): None,
    **{("datetime", n): None for n in ("date", "time", "datetime", "timedelta", "timezone")},
    ("decimal", "Decimal"): None,
    ("fractions", "Fraction"): _fraction_args,
    ("uuid", "UUID"): None,
    **{
        (m, n): None
        for m in ("pathlib", "pathlib._local")
        for n in ("PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath")
    },
    **{("ipaddress", f"IPv{v}{n}"): None for v in "46" for n in ("Address", "Network", "Interface")},
    **{("collections", n): None for n in ("OrderedDict", "Counter", "deque")},
}

_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray})
_SEQUENCES = frozenset({list, tuple, set, frozenset})
_HEAPTYPE = 1 << 9
_MISSING = object()


def _resolve_module(module: str) -> types.ModuleType | None:
    found = sys.modules.get(module)
    return found if isinstance(found, types.ModuleType) else None


def _resolve(module: str, qualname: str) -> object:
    """``module.qualname`` from a module the host has loaded, through ``__dict__`` lookups only:
    no import, no module ``__getattr__``, no descriptor runs. ``_MISSING`` when absent."""
    mod = _resolve_module(module)
    if mod is None:
        return _MISSING
    obj: object = mod.__dict__.get(qualname.partition(".")[0], _MISSING)
    for part in qualname.split(".")[1:]:
        if not isinstance(obj, type):
            return _MISSING
        obj = _TYPE_DICT(obj).get(part, _MISSING)
    return obj


_TYPE_DICT: Callable[[type], Any] = type.__dict__["__dict__"].__get__  # a metaclass cannot shadow it


# (len(sys.modules) when computed, the classes): one tuple, replaced whole (threads).
_classes_cache: tuple[int, dict[type, tuple[str, str]]] = (-1, {})


def _data_only_classes(refresh: bool = False) -> dict[type, tuple[str, str]]:
    """The value classes the host has loaded, by class. Cached while ``sys.modules`` keeps
    its size; a class missing from the cache makes the caller ask again with ``refresh``."""
    global _classes_cache
    count, classes = _classes_cache
    if count == len(sys.modules) and not refresh:
        return classes
    count = len(sys.modules)
    found: dict[type, tuple[str, str]] = {}
    for key in _VALUE_CLASSES:
        cls = _resolve(*key)
        if isinstance(cls, type):
            found.setdefault(cls, key)
    _classes_cache = (count, found)
    return found


def _state(obj: object) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """``obj``'s instance ``__dict__`` (a copy) and its set slots, as pickle would see them."""
    state = object.__getstate__(obj)  # the default one, whatever the class overrides
    attrs, slots = state if type(state) is tuple else (state, None)
    return (dict(attrs) if attrs else None), slots


class _Snapshot:
    """An instance's state as its constructor left it; :meth:`restore` puts it back.

    After the load, slots set since (lazily computed caches, or set by ``BUILD``) are
    cleared (recomputed on use), changed slots and attributes get their value back.
    """

    __slots__ = ("attrs", "cls", "obj", "slots")

    def __init__(self, obj: object) -> None:
        self.obj = obj
        self.cls = type(obj)
        self.attrs, self.slots = _state(obj)

    def restore(self) -> None:
        obj = self.obj
        if type(obj) is not self.cls:
            object.__setattr__(obj, "__class__", self.cls)
        attrs, slots = _state(obj)
        old = self.slots or {}
        for name, value in (slots or {}).items():
            if name not in old:
                object.__delattr__(obj, name)
            elif old[name] is not value:
                object.__setattr__(obj, name, old[name])
        if attrs or self.attrs:
            before = self.attrs or {}
            if (
                attrs is None
                or attrs.keys() != before.keys()
                or any(attrs[k] is not v for k, v in before.items())
            ):
                live = object.__getattribute__(obj, "__dict__")
                live.clear()
                live.update(before)


class _Maker:
    """What data-only ``find_class`` returns instead of a class: calling it (``REDUCE``) builds
    a value of the class. It is not a type (``NEWOBJ`` is refused) and ``BUILD`` on it is
    refused, so a pickle can never set attributes on a host class."""

    __slots__ = ("_check", "_cls", "_load", "_module", "_name")

    def __init__(self, load: _DataOnlyRules, cls: type, module: str, name: str, check: Any) -> None:
        self._load = load
        self._cls = cls
        self._module = module
        self._name = name
        self._check = check

    def __call__(self, *args: object) -> object:
        if self._check is not None:
            self._check(args)
        # A constructor's work grows with its arguments, which a pickle can share: one list
        # given to a million deques is a million copies (memory), one dict to a million
        # Counters a million rehashes. The load pays for each call out of its budget.
        self._load.charge(1 + _size(args), self)
        obj = self._cls(*args)
        self._load.built(obj, self)
        return obj

    def __setstate__(self, state: object) -> None:
        raise RestrictedUnpicklingError(f"malformed result: BUILD on the class {self} is refused")

    def __reduce__(self) -> Any:
        raise TypeError("the result guard's constructors cannot be pickled")

    def __str__(self) -> str:
        return f"{self._module}.{self._name}"


def _refused(module: str, name: str, why: str) -> RestrictedUnpicklingError:
    return RestrictedUnpicklingError(f"{module}.{name} is refused by the sandbox's result guard: {why}")


def _not_loaded(module: str) -> str:
    return (
        f"module {module} is not loaded in the host (the result guard never imports); "
        f"import {module} in the calling program first"
    )


_DATA_ONLY_HINT = (
    "the result channel accepts only values (remote-result-mode=data-only); "
    "return plain data, or set remote-result-mode=objects in the rule file"
)


class _Budget:
    """What one load may still spend on work its bytes do not pay for (constructors, hashing,
    ``BUILD``): a few units per byte of the result."""

    left = 0

    def charge(self, units: int, what: object) -> None:
        self.left -= units
        if self.left < 0:
            raise RestrictedUnpicklingError(
                f"the result is refused by the sandbox's result guard: it asks the host for far more "
                f"work than its size ({what}: a decompression bomb)"
            )


class _DataOnlyRules(_Budget):
    """``remote-result-mode=data-only``: ``find_class`` for either unpickler."""

    # Class-level defaults: no Python ``__init__`` on the path of every result.
    classes: dict[type, tuple[str, str]] | None = None  # set once find_class resolved a class
    snapshots: list[_Snapshot] | None = None  # the instances the makers built, as built
    builds = False  # whether the pickle has a BUILD opcode (the prescan said)

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key not in _VALUE_CLASSES:
            raise _refused(module, name, _DATA_ONLY_HINT)
        mod = sys.modules.get(module)
        cls = mod.__dict__.get(name) if isinstance(mod, types.ModuleType) else None
        if not isinstance(cls, type):
            raise _refused(module, name, _not_loaded(module))
        if self.classes is None:
            self.classes = _data_only_classes()
        if module == "uuid":  # NEWOBJ then BUILD → UUID.__setstate__, checked by the walk
            return cls
        return _Maker(self, cls, module, name, _VALUE_CLASSES[key])

    def built(self, obj: object, maker: _Maker) -> None:
        cls = type(obj)
        classes = self.classes
        if classes is None or cls not in classes:
            classes = self.classes = _data_only_classes(refresh=True)
            if cls not in classes:
                raise RestrictedUnpicklingError(
                    f"{maker} built a {_type_name(cls)}, which the result guard refuses"
                )
        # Only BUILD can change an instance of these (none has append/extend/add, and
        # SETITEMS changes the items of a Counter, not its state): no BUILD, no snapshot.
        if (cls.__flags__ & _HEAPTYPE or hasattr(obj, "__dict__")) and self.builds:
            if self.snapshots is None:
                self.snapshots = []
            self.snapshots.append(_Snapshot(obj))


class _DataOnlyUnpickler(_DataOnlyRules, pickle.Unpickler):
    pass


#: argument types whose size a constructor's work follows
_SIZED = frozenset({str, bytes, bytearray, tuple, list, dict, set, frozenset})


def _size(values: Iterable[Any]) -> int:
    """The work a constructor (or BUILD) may do with ``values``: their lengths."""
    return sum(len(v) if type(v) in _SIZED else 1 for v in values)


def _value_error(obj: object) -> RestrictedUnpicklingError:
    if isinstance(obj, _Maker):
        what = f"the class {obj}"
    elif isinstance(obj, type):
        what = f"the class {_type_name(obj)}"
    else:
        what = f"a {_type_name(type(obj))} value"
    return RestrictedUnpicklingError(f"{what} is refused by the sandbox's result guard: {_DATA_ONLY_HINT}")


def _check_uuid(obj: Any) -> None:
    try:
        value = obj.int
        safe = obj.is_safe
    except AttributeError:
        value = safe = None
    safe_cls = getattr(sys.modules.get("uuid"), "SafeUUID", None)
    if type(value) is not int or not 0 <= value < 1 << 128 or type(safe) is not safe_cls:
        raise RestrictedUnpicklingError("malformed result: a uuid.UUID with an invalid state")


class _Kinds:
    """The walk's view of the data-only types: which hold no values, which hold some."""

    __slots__ = ("leaves", "mappings", "sequences", "uuid")

    def __init__(self, classes: dict[type, tuple[str, str]]) -> None:
        by_name = {name: cls for cls, (_, name) in classes.items()}
        self.mappings = frozenset({dict} | {by_name[n] for n in ("OrderedDict", "Counter") if n in by_name})
        self.sequences = _SEQUENCES | ({by_name["deque"]} if "deque" in by_name else set())
        self.uuid = by_name.get("UUID")
        self.leaves = _SCALARS | (set(classes) - self.mappings - self.sequences - {self.uuid})


_PLAIN = _Kinds({})  # no class resolved: the scalars and the builtin containers
_kinds_cache: tuple[object, _Kinds] = (None, _PLAIN)  # (a classes dict, its _Kinds)


def _kinds(classes: dict[type, tuple[str, str]] | None) -> _Kinds:
    global _kinds_cache
    if not classes:
        return _PLAIN
    cached, kinds = _kinds_cache
    if cached is not classes:
        kinds = _Kinds(classes)
        _kinds_cache = (classes, kinds)
    return kinds


def _walk(root: object, kinds: _Kinds, max_depth: int, deadline: float | None = None) -> None:
    """Refuse anything but the data-only types; refuse nesting deeper than ``max_depth``.

    Iterative. Every container is examined once, shared and cyclic ones too (a pickle can
    reference one list a million times in a few bytes). A shared container counts at the
    deepest place it appears: its height plus the depth of each path that reaches it.
    """
    leaves, mappings, sequences = kinds.leaves, kinds.mappings, kinds.sequences
    if type(root) in leaves:
        return
    heights: dict[int, int] = {}  # examined containers → height
    active: set[int] = set()  # containers on the current path (a cycle leads back to one)
    # Frames: [container id, iterator over its children that are not leaves, tallest child].
    stack: list[list[Any]] = []
    child: object = root
    while True:
        cls = type(child)
        if cls in leaves:
            pass
        elif cls in mappings or cls in sequences:
            key = id(child)
            height = heights.get(key)
            if height is not None:
                if len(stack) + height > max_depth:
                    raise RestrictedUnpicklingError(f"the result is nested deeper than {max_depth} levels")
                if height > stack[-1][2]:
                    stack[-1][2] = height
            elif key not in active:  # (else a cycle: already being walked)
                if len(stack) >= max_depth:
                    raise RestrictedUnpicklingError(f"the result is nested deeper than {max_depth} levels")
                if cls in mappings:
                    keys: Iterable[object] = dict.keys(child)  # type: ignore[arg-type]
                    values: Iterable[object] = dict.values(child)  # type: ignore[arg-type]
                    if set(map(type, keys)) <= leaves and set(map(type, values)) <= leaves:
                        children = None
                    else:
                        children = [k for k in keys if type(k) not in leaves]
                        children += [v for v in values if type(v) not in leaves]
                elif set(map(type, child)) <= leaves:  # type: ignore[call-overload]
                    children = None
                else:
                    children = [item for item in child if type(item) not in leaves]  # type: ignore[attr-defined]
                if children:
                    active.add(key)
                    stack.append([key, iter(children), 0])
                    if deadline is not None and not len(active) & 0x3FF:
                        _check_deadline(deadline)
                else:
                    heights[key] = 1
                    if stack and stack[-1][2] == 0:
                        stack[-1][2] = 1
        elif cls is kinds.uuid:
            _check_uuid(child)
        else:
            raise _value_error(child)
        # The next child, finishing the containers whose children are all examined.
        while stack:
            frame = stack[-1]
            child = next(frame[1], _MISSING)
            if child is not _MISSING:
                break
            stack.pop()
            height = frame[2] + 1
            heights[frame[0]] = height
            active.discard(frame[0])
            if stack and height > stack[-1][2]:
                stack[-1][2] = height
        else:
            return


# -- objects -----------------------------------------------------------------------------------

_DENIED_MODULES = frozenset(
    {
        # processes, the OS, the interpreter, imports
        "os", "posix", "nt", "subprocess", "_posixsubprocess", "pty", "sys", "importlib", "runpy",
        "ctypes", "_ctypes", "mmap", "signal", "_signal", "platform", "sysconfig", "resource", "fcntl",
        "multiprocessing", "concurrent", "asyncio", "_thread", "threading", "zipimport", "gc",
        # network
        "socket", "_socket", "ssl", "_ssl", "select", "selectors", "socketserver", "http", "urllib",
        "ftplib", "smtplib", "poplib", "imaplib", "webbrowser", "xmlrpc",
        # files
        "io", "_io", "codecs", "tempfile", "shutil", "logging", "shelve", "dbm", "sqlite3",
        "gzip", "bz2", "lzma", "zipfile", "tarfile",
        # callables that call callables, code objects, introspection, debugging
        "operator", "_operator", "functools", "_functools", "types", "code", "codeop", "timeit",
        "pdb", "bdb", "inspect",
        # pickling
        "pickle", "_pickle", "copyreg", "marshal", "copy",
        # this package: its objects are never results
        "pysandboxes", "python_sb",
    }
)  # fmt: skip

# Builtins that are value types (``list`` is a ``defaultdict`` factory, ``range`` a value...).
_BUILTIN_TYPES = frozenset(
    {"int", "str", "list", "dict", "set", "frozenset", "tuple", "bytes", "bytearray", "complex", "float",
     "bool", "slice", "range"}
)  # fmt: skip


def _objects_refusal(module: str, name: str, cls: object) -> str | None:
    """Why objects mode refuses ``cls`` (found as ``module.name``), or None."""
    if not isinstance(cls, type):
        return "only classes are resolved, never functions, methods or modules"
    if cls.__module__ == "builtins" or module == "builtins":
        if module != "builtins" or name not in _BUILTIN_TYPES:
            return "among the builtins only value types are resolved"
        return None
    if issubclass(cls, BaseException):
        return "exceptions are not results"
    mro = type.__dict__["__mro__"].__get__(cls)
    if type in mro:
        return "metaclasses are refused"
    for klass in mro:
        origin = klass.__module__ if isinstance(klass.__module__, str) else ""
        if origin.partition(".")[0] in _DENIED_MODULES:
            return f"it is (or derives from) {origin}.{klass.__qualname__}, from a denied module"
    return None


class _ClassState:
    """What a pickle could change on a class it resolved: ``BUILD`` on the class sets class
    attributes (slot state: ``setattr``), and ``BUILD`` on an enum member (which the class
    returns, shared, instead of a new instance) sets the member's attributes."""

    __slots__ = ("attrs", "bases", "cls", "members", "meta", "name", "qualname")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.attrs = dict(_TYPE_DICT(cls))
        self.bases = cls.__bases__
        self.meta = type(cls)
        self.name = cls.__name__
        self.qualname = cls.__qualname__
        members = self.attrs.get("_member_map_")  # an Enum
        self.members: list[tuple[Any, dict[str, object]]] | None = None
        if type(members) is dict:
            self.members = [
                (m, dict(m.__dict__))
                for m in members.values()
                if isinstance(getattr(m, "__dict__", None), dict)
            ]

    def changed(self) -> bool:
        cls = self.cls
        now = _TYPE_DICT(cls)
        return not (
            cls.__bases__ is self.bases
            and type(cls) is self.meta
            and cls.__name__ == self.name
            and cls.__qualname__ == self.qualname
            and len(now) == len(self.attrs)
            and all(map(_is, map(now.get, self.attrs), self.attrs.values()))
        )

    def members_changed(self) -> bool:
        for member, attrs in self.members or ():
            now = member.__dict__
            if len(now) != len(attrs) or not all(map(_is, map(now.get, attrs), attrs.values())):
                return True
        return False

    def restore(self) -> None:
        cls = self.cls
        if type(cls) is not self.meta:
            type.__setattr__(cls, "__class__", self.meta)
        now = _TYPE_DICT(cls)
        for key in [k for k in now if k not in self.attrs]:
            type.__delattr__(cls, key)
        for key, value in self.attrs.items():
            if now.get(key, _MISSING) is not value:
                type.__setattr__(cls, key, value)
        for attr, value in (
            ("__bases__", self.bases),
            ("__name__", self.name),
            ("__qualname__", self.qualname),
        ):
            if getattr(cls, attr) != value:
                type.__setattr__(cls, attr, value)
        for member, attrs in self.members or ():
            if member.__dict__ != attrs or any(member.__dict__.get(k) is not v for k, v in attrs.items()):
                member.__dict__.clear()
                member.__dict__.update(attrs)


class _ObjectsRules(_Budget):
    """``remote-result-mode=objects``: ``find_class`` for either unpickler."""

    class_states: dict[int, _ClassState] | None = None  # the heap classes resolved, as they were

    def find_class(self, module: str, name: str) -> Any:
        if module.partition(".")[0] in _DENIED_MODULES:
            raise _refused(module, name, f"module {module} is denied (remote-result-mode=objects)")
        if _resolve_module(module) is None:
            raise _refused(module, name, _not_loaded(module))
        cls = _resolve(module, name)
        if cls is _MISSING:
            raise _refused(module, name, f"module {module} has no class {name} (remote-result-mode=objects)")
        why = _objects_refusal(module, name, cls)
        if why is not None:
            raise _refused(module, name, f"{why} (remote-result-mode=objects)")
        assert isinstance(cls, type)
        if cls.__flags__ & _HEAPTYPE:
            if self.class_states is None:
                self.class_states = {}
            if id(cls) not in self.class_states:
                self.class_states[id(cls)] = _ClassState(cls)
        return cls


# Opcodes for the BUILD-target simulation: those that pop to the mark and push one object, and
# those that pop to the mark only. The others move ``len(stack_before)`` → ``len(stack_after)``.
_POP_MARK_PUSH = frozenset({"LIST", "TUPLE", "DICT", "FROZENSET", "INST", "OBJ"})
_POP_MARK_ONLY = frozenset({"APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"})


def _builds_on_a_class(data: bytes) -> bool:
    """Whether a ``BUILD`` opcode of ``data`` targets an object ``GLOBAL``/``STACK_GLOBAL`` put
    on the stack (a class, in objects mode). Simulates the stack with one flag per slot;
    anything it cannot follow counts as yes. Only run when a class changed during a load."""
    import pickletools

    stack: list[bool] = []
    marks: list[int] = []
    memo: dict[int, bool] = {}
    try:
        for opcode, arg, _ in pickletools.genops(data):
            name = opcode.name
            if name == "BUILD":
                stack.pop()
                if stack[-1]:
                    return True
            elif name == "GLOBAL":
                stack.append(True)
            elif name == "STACK_GLOBAL":
                del stack[-2:]
                stack.append(True)
            elif name == "MARK":
                marks.append(len(stack))
            elif name in _POP_MARK_PUSH or name in _POP_MARK_ONLY:
                del stack[marks.pop() :]
                if name in _POP_MARK_PUSH:
                    stack.append(False)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(arg)] = stack[-1]  # type: ignore[arg-type]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[int(arg)])  # type: ignore[arg-type]
            elif name == "DUP":
                stack.append(stack[-1])
            elif name == "POP":
                if marks and len(stack) == marks[-1]:
                    marks.pop()
                else:
                    stack.pop()
            elif name == "APPEND":
                stack.pop()
            elif name == "SETITEM":
                del stack[-2:]
            elif name == "STOP":
                return False
            else:
                pops, pushes = len(opcode.stack_before), len(opcode.stack_after)
                if pops:
                    if pops > len(stack):
                        return True
                    del stack[-pops:]
                stack.extend([False] * pushes)
    except Exception:  # cannot follow: count it as a yes
        return True
    return True


# -- the decoder's work: hashing and time ---------------------------------------------------
# A result is decoded in the host, after the call: what the decoder does must stay
# proportional to the result's size, and stop at the call's deadline.
#
# Building a dict or a set hashes each key and compares it with every key already there of the
# same hash: keys that share one hash make it quadratic (600 KB blocked a host for 37 s). A
# child chooses its keys: the hash of ints (``n % (2**61 - 1)``), of tuples and frozensets (of
# their items' hashes), of the value classes (complex, Decimal, Fraction, UUID, networks) is
# the same in every process, so a child aims them at one value; str, bytes and dates hash with
# the host's secret (PYTHONHASHSEED) and cannot be aimed. A tuple's hash is not cached and
# costs its whole size, shared parts each time: ``t = (t, t)`` fifty times hashes 2**50 items.
#
# So the C unpickler decodes a result only when its keys cannot be aimed: no dict or set, or
# keys among strings, bytes and ints below 2**56, plus floats in a result of at most
# _SMALL_FLOATS bytes (a few hundred floats share a hash: each insertion may walk them all) or
# larger ints in one of at most _SMALL_INTS bytes (quadratic, but on a few hundred keys): at
# worst tens of milliseconds. Any other result is decoded by _Guarded, the pure-Python
# unpickler, which looks at each key before the dict or set takes it: a key of a container
# whose hash another key of it already has is a repeat, more than _MAX_REPEATS repeats refuse
# the result, and each key's hashing work is paid out of the load's budget (a few units per
# byte, see _Budget), as is each constructor call and BUILD (which a shared state dict makes
# a copy per object).

_SMALL_FLOATS = 16 * 1024
_SMALL_INTS = 8 * 1024
#: keys of one dict or set that hash like another key of it (honest data: almost never)
_MAX_REPEATS = 32
#: work units a load may spend per byte of the result, and in any case
_UNITS_PER_BYTE = 8
_UNITS_FREE = 1 << 16


def _careful(flags: int, size: int) -> bool:
    """Whether a pickle that builds ``flags`` needs the guarded unpickler (see above)."""
    if flags & _BUILDS:
        return True
    if not flags & _HASHES:
        return False
    if flags & _COMPOSITE:
        return True
    return bool((flags & _FLOATS and size > _SMALL_FLOATS) or (flags & _BIGINTS and size > _SMALL_INTS))


class LateResult(SandBoxTimeoutError):
    """Decoding a result was still running at the call's deadline."""


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise LateResult("decoding the result went past the call's timeout")


class _Reader:
    """The pickle for an unpickler, a piece at a time: each piece (a frame of at most
    ``_MAX_FRAME``, 128 KiB without frames) first looks at the clock."""

    __slots__ = ("data", "deadline", "position")

    def __init__(self, data: bytes, deadline: float | None) -> None:
        self.data = data
        self.deadline = deadline
        self.position = 0

    def read(self, size: int = -1) -> bytes:
        _check_deadline(self.deadline)
        start = self.position
        stop = len(self.data) if size < 0 else start + size
        self.position = min(stop, len(self.data))
        return self.data[start:stop]

    def readinto(self, buffer: Any) -> int:
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def readline(self) -> bytes:
        _check_deadline(self.deadline)
        start = self.position
        stop = self.data.find(b"\n", start)
        self.position = len(self.data) if stop < 0 else stop + 1
        return self.data[start : self.position]

    def peek(self, size: int = 0) -> bytes:
        return self.data[self.position : self.position + max(size, 1)]


def _source(data: bytes, deadline: float | None) -> Any:
    # 16 KiB decode within milliseconds, either way: BytesIO, no clock.
    if len(data) <= 16384 or (deadline is None and len(data) <= _MAX_FRAME):
        return io.BytesIO(data)
    return _Reader(data, deadline)


class _Keys:
    """What a guarded load knows of one dict or set: its keys' hashes, and the repeats."""

    __slots__ = ("container", "hashes", "repeats")

    def __init__(self, container: object) -> None:
        self.container = container  # kept alive: its id stays its own during the load
        self.hashes: set[int] = set()
        self.repeats = 0


_TUPLE_HASH = (tuple, frozenset)
_PythonUnpickler: Any = pickle._Unpickler  # type: ignore[attr-defined]


class _Guarded(_Budget, _PythonUnpickler):  # type: ignore[misc]
    """The pure-Python unpickler, whose dicts and sets take a key only once it is checked."""

    dispatch = dict(_PythonUnpickler.dispatch)  # noqa: RUF012 - the opcode table, per class
    max_depth = 256
    keys: dict[int, _Keys] | None = None  # id(container) -> what its keys hash to
    costs: dict[int, tuple[object, int]] | None = None  # id(tuple) -> (tuple, hashing work)

    def _take(self, container: object, keys: Iterable[object]) -> None:
        """Check ``keys`` before ``container`` (a dict or a set; None: a new frozenset) takes
        them: their hashing work is paid for, and their hashes rarely repeat."""
        if container is not None and not isinstance(container, (dict, set)):
            return  # a list or a deque takes an index; anything else refuses the item itself
        table = self.keys
        if table is None:
            table = self.keys = {}
        state = table.get(id(container)) if container is not None else None
        if state is None:
            state = _Keys(container)
            if container is not None:
                table[id(container)] = state
        hashes = state.hashes
        for key in keys:
            kind = type(key)
            if kind is str or kind is bytes or key is None:
                cost = 1  # cached after the first time
            elif kind is int:
                cost = 1 + key.bit_length() // 1024  # type: ignore[attr-defined]
            elif kind in _TUPLE_HASH:
                cost = self._tuple_cost(key)
            else:
                cost = 16  # a float, a bool, a value class: a Python __hash__ at worst
            self.charge(cost, f"hashing a {_type_name(kind)} key")
            value = hash(key)
            if value in hashes:
                state.repeats += 1
                if state.repeats > _MAX_REPEATS:
                    raise RestrictedUnpicklingError(
                        f"the result is refused by the sandbox's result guard: more than {_MAX_REPEATS} "
                        f"keys of one {_type_name(type(container)) if container is not None else 'frozenset'} "
                        "share a hash with another key (a hash-collision attack on the host)"
                    )
            else:
                hashes.add(value)

    def _tuple_cost(self, root: object) -> int:
        """What hashing ``root`` (a tuple or a frozenset) costs: every item of every tuple in
        it, a shared one each time it is reached (tuples do not cache their hash). Refuses
        a nesting deeper than ``max_depth`` (hashing it would exhaust the C stack)."""
        costs = self.costs
        if costs is None:
            costs = self.costs = {}
        known = costs.get(id(root))
        if known is not None:
            return 1 if type(root) is frozenset else known[1]  # a frozenset caches its hash
        # Iterative post-order: frames of [tuple, iterator over its items, cost so far].
        stack: list[list[Any]] = [[root, iter(root) if type(root) is tuple else iter(()), 1]]  # type: ignore[call-overload]
        if type(root) is frozenset:
            stack[0][2] = 1 + len(root)  # type: ignore[arg-type]  # its hash is cached once computed
        while True:
            frame = stack[-1]
            item = next(frame[1], _MISSING)
            if item is _MISSING:
                stack.pop()
                done = frame[2]
                costs[id(frame[0])] = (frame[0], done)
                if not stack:
                    return done  # type: ignore[no-any-return]
                stack[-1][2] += done
                continue
            if type(item) is tuple:
                known = costs.get(id(item))
                if known is not None:
                    frame[2] += known[1]
                elif len(stack) >= self.max_depth:
                    raise RestrictedUnpicklingError(
                        f"the result is nested deeper than {self.max_depth} levels"
                    )
                else:
                    stack.append([item, iter(item), 1])
            elif type(item) is int:
                frame[2] += 1 + item.bit_length() // 1024
            else:
                frame[2] += 1

    def load_setitem(self) -> None:
        stack = self.stack
        value = stack.pop()
        key = stack.pop()
        target = stack[-1]
        self._take(target, (key,))
        target[key] = value

    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._take(target, items[::2])
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_dict(self) -> None:
        items = self.pop_mark()
        target: dict[object, object] = {}
        self._take(target, items[::2])
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]
        self.append(target)

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._take(target, items)
        if isinstance(target, set):
            target.update(items)
        else:
            for item in items:
                target.add(item)

    def load_frozenset(self) -> None:
        items = self.pop_mark()
        self._take(None, items)
        self.append(frozenset(items))

    def load_build(self) -> None:
        state = self.stack[-1]
        self.charge(_size(state if type(state) is tuple else (state,)), "BUILD")  # (__dict__, slots)
        super().load_build()

    for _name, _opcode in (
        ("load_setitem", pickle.SETITEM), ("load_setitems", pickle.SETITEMS), ("load_dict", pickle.DICT),
        ("load_additems", pickle.ADDITEMS), ("load_frozenset", pickle.FROZENSET),
        ("load_build", pickle.BUILD),
    ):  # fmt: skip
        dispatch[_opcode[0]] = locals()[_name]
    del _name, _opcode


class _GuardedDataOnlyUnpickler(_DataOnlyRules, _Guarded):
    pass


class _ObjectsUnpickler(_ObjectsRules, pickle.Unpickler):
    pass


class _GuardedObjectsUnpickler(_ObjectsRules, _Guarded):
    pass


# -- child → host ------------------------------------------------------------------------------


def loads_result(
    data: bytes | bytearray | memoryview,
    buffers: Iterable[Any] | None = None,
    *,
    mode: str = DATA_ONLY,
    guard: bool = True,
    max_depth: int = 256,
    deadline: float | None = None,
) -> object:
    """Decode a value the sandboxed child sent back, through the result guard.

    ``mode`` is ``remote-result-mode`` (``"data-only"`` or ``"objects"``); ``guard=False``
    (``remote-result-guard=false``) is honoured in objects mode only, and ``max_depth``
    (the nesting of containers) in data-only mode only. Any refusal, and any malformed
    pickle, raises :class:`RestrictedUnpicklingError`. ``deadline`` (``time.monotonic()``):
    past it the decoding stops with :class:`LateResult` (a ``SandBoxTimeoutError``).
    """
    if type(data) is not bytes:
        data = bytes(data)
    if mode != DATA_ONLY and mode != OBJECTS:
        raise ValueError(f"remote-result-mode must be {DATA_ONLY} or {OBJECTS}, not {mode!r}")
    buffers = list(buffers) if buffers is not None else None
    # A large payload almost always holds a watched byte: scan it without searching.
    flags = _prescan(data, deadline) if len(data) > 16384 or _needs_prescan(data) else 0
    try:
        if mode == DATA_ONLY:
            return _load_data_only(data, buffers, max_depth, flags, deadline)
        if not guard:
            return _loads(data, buffers=buffers)
        return _load_objects(data, buffers, flags, deadline)
    except (RestrictedUnpicklingError, LateResult):
        raise
    except RecursionError as exc:
        raise RestrictedUnpicklingError(f"the result is nested deeper than {max_depth} levels") from exc
    except Exception as exc:
        raise RestrictedUnpicklingError(f"malformed result: {type(exc).__name__}: {exc}") from exc


def _budget(data: bytes, buffers: list[Any] | None) -> int:
    size = len(data) + sum(memoryview(b).nbytes for b in buffers or ())
    return _UNITS_PER_BYTE * size + _UNITS_FREE


def _load_data_only(
    data: bytes, buffers: list[Any] | None, max_depth: int, flags: int, deadline: float | None
) -> object:
    unpickler: _DataOnlyRules
    if _careful(flags, len(data)):
        guarded = _GuardedDataOnlyUnpickler(_source(data, deadline), fix_imports=False, buffers=buffers)
        guarded.max_depth = max_depth
        unpickler = guarded
    else:
        unpickler = _DataOnlyUnpickler(_source(data, deadline), fix_imports=False, buffers=buffers)
    unpickler.left = _budget(data, buffers)
    unpickler.builds = bool(flags & _BUILDS)
    try:
        value = unpickler.load()  # type: ignore[attr-defined]
    finally:
        for snapshot in unpickler.snapshots or ():
            snapshot.restore()
    if unpickler.classes is None and not buffers and len(data) <= max_depth:
        # Without a class or an out-of-band buffer, opcodes build only the walk's scalar and
        # container types; each container takes at least one byte, so nesting ≤ len(data).
        return value
    _walk(value, _kinds(unpickler.classes), max_depth, deadline)
    return value


def _load_objects(data: bytes, buffers: list[Any] | None, flags: int, deadline: float | None) -> object:
    kind = _GuardedObjectsUnpickler if _careful(flags, len(data)) else _ObjectsUnpickler
    unpickler = kind(_source(data, deadline), fix_imports=False, buffers=buffers)
    unpickler.left = _budget(data, buffers)
    try:
        return unpickler.load()
    finally:
        # A class can change for good reasons while the load runs (a constructor counting
        # instances, another thread): undo class changes only when the pickle did build on a
        # class, and then refuse it. Unpickling an enum member never changes it: undo, refuse.
        states = unpickler.class_states
        if states:
            changed = [state for state in states.values() if state.changed()]
            if changed and not _builds_on_a_class(data):
                changed = []
            changed += [
                state for state in states.values() if state.members_changed() and state not in changed
            ]
            if changed:
                for state in changed:
                    state.restore()
                names = ", ".join(f"{state.cls.__module__}.{state.qualname}" for state in changed)
                raise RestrictedUnpicklingError(
                    f"the result tried to change the host classes {names} (undone)"
                )


# -- exceptions --------------------------------------------------------------------------------
# A description is a tuple of plain values (decoded host-side with the data-only guard):
#   ("pysandboxes.exception", 1, [entry, ...]), entry 0 being the exception raised, and
#   entry = (module, qualname, base_only, code, message, args, state, denials, chain_denials,
#            frames, cause, context, suppress_context, notes, members, group_message)
# args/state: pickles (or None), decoded with the data-only guard; frames: [(file, line, name)];
# cause/context: entry indexes or None; members: entry indexes (exception groups) or None.

_MAGIC = "pysandboxes.exception"
_VERSION = 2


def encode_exception(exc: BaseException, *, skip: int = 0, max_size: int | None = None) -> bytes:
    """Child side: describe ``exc`` with plain values for :func:`decode_exception`.

    Follows ``__cause__``, ``__context__`` and group members (16 exceptions at most);
    ``skip`` drops that many leading traceback entries of ``exc`` (the channel's frames).
    Above ``max_size`` bytes the description sheds the arguments, then the chain and the
    traceback, then most of the message; it never raises.
    """
    try:
        blob = _dumps(_describe_chain(exc, skip), PROTOCOL)
        if max_size is None or len(blob) <= max_size:
            return blob
        entries = [_shed(entry) for entry in _describe_chain(exc, skip)[2]]  # type: ignore[attr-defined]
        blob = _dumps((_MAGIC, _VERSION, entries), PROTOCOL)
        if len(blob) <= max_size:
            return blob
        failure: BaseException = ValueError(f"more than remote-max-payload={max_size} bytes")
    except Exception as error:  # a hostile exception: its type and message at least
        failure = error
    entry = _minimal_entry(exc, failure)
    blob = _dumps((_MAGIC, _VERSION, [entry]), PROTOCOL)
    if max_size is not None and len(blob) > max_size:
        entry = (*entry[:4], str(entry[4])[: max(0, max_size // 8)], *entry[5:])
        blob = _dumps((_MAGIC, _VERSION, [entry]), PROTOCOL)
    return blob


def _shed(entry: tuple[object, ...]) -> tuple[object, ...]:
    """An entry without its pickled arguments, state and notes."""
    return (*entry[:5], None, None, *entry[7:13], None, *entry[14:])


def _describe_chain(exc: BaseException, skip: int) -> tuple[object, ...]:
    order: list[BaseException] = [exc]
    index: dict[int, int] = {id(exc): 0}
    position = 0
    while position < len(order):
        current = order[position]
        position += 1
        linked: list[BaseException | None] = [current.__cause__, current.__context__]
        if isinstance(current, BaseExceptionGroup):
            linked.extend(current.exceptions)
        for other in linked:
            if other is not None and id(other) not in index and len(order) < _MAX_EXCEPTIONS:
                index[id(other)] = len(order)
                order.append(other)
    entries = [_describe_exception(e, index, skip if e is exc else 0) for e in order]
    return (_MAGIC, _VERSION, entries)


def _text(value: object, limit: int = _MAX_MESSAGE) -> str:
    text = value if type(value) is str else str(value)
    return text if len(text) <= limit else text[:limit] + "… [truncated]"


def _message(e: BaseException) -> str:
    try:
        return _text(str(e))
    except Exception:
        return f"<exception str() failed for {type(e).__qualname__}>"


def _pickled(value: object) -> bytes | None:
    try:
        data = _dumps(value, PROTOCOL)
    except Exception:
        return None
    return data if len(data) <= _MAX_ARGS else None


def _source_line(frame: Any, filename: str, line: int) -> str:
    """The source line a traceback shows, read here in the child, under the child's rules: the
    host shows this text and never reads a file a child names. ``linecache`` when the program
    loaded it (it knows loaders and encodings), else the file as UTF-8 (importing
    ``linecache`` would cost every child start a few milliseconds)."""
    if not line:
        return ""
    linecache = sys.modules.get("linecache")
    try:
        if linecache is not None:
            linecache.lazycache(filename, frame.f_globals)  # a module whose loader has the source
            text = linecache.getline(filename, line)
        else:
            text = _read_line(filename, line)
    except Exception:
        return ""
    return _text(text.strip(), _MAX_SOURCE) if type(text) is str else ""


#: the child's own source files, as it read them for its tracebacks (file -> lines)
_SOURCES: dict[str, list[bytes]] = {}


def _read_line(filename: str, line: int) -> str:
    lines = _SOURCES.get(filename)
    if lines is None:
        lines = []
        if not (filename.startswith("<") and filename.endswith(">")):
            fd = os.open(filename, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: no wait
            try:
                info = os.fstat(fd)
                if stat.S_ISREG(info.st_mode) and info.st_size <= 16 << 20:
                    with open(fd, "rb", closefd=False) as f:
                        lines = f.read().split(b"\n")
            finally:
                os.close(fd)
        if len(_SOURCES) >= 64:
            _SOURCES.clear()
        _SOURCES[filename] = lines
    return lines[line - 1].decode("utf-8", "replace") if line <= len(lines) else ""


def _describe_exception(e: BaseException, index: dict[int, int], skip: int) -> tuple[object, ...]:
    cls = type(e)
    args: object = e.args
    state: object = None
    try:
        reduced = e.__reduce_ex__(PROTOCOL)
        if isinstance(reduced, tuple) and len(reduced) >= 2 and isinstance(reduced[1], tuple):
            if reduced[0] is cls:
                args = reduced[1]
            state = reduced[2] if len(reduced) > 2 and isinstance(reduced[2], dict) else None
    except Exception:
        pass
    code: int | str | None = None
    if isinstance(e, SystemExit):
        value = e.code
        if value is None or (type(value) in (int, bool) and value.bit_length() <= 64):  # type: ignore[union-attr]
            code = value  # type: ignore[assignment]
        else:
            code = _text(value)
    entries: list[tuple[Any, int, str, str]] = []
    tb = e.__traceback__
    while tb is not None and len(entries) < skip + 100 * _MAX_FRAMES:
        code_obj = tb.tb_frame.f_code
        line = tb.tb_lineno
        entries.append(
            (tb.tb_frame, line if type(line) is int and line >= 0 else 0,
             _text(code_obj.co_filename, _MAX_NAME), _text(code_obj.co_name, _MAX_NAME))
        )  # fmt: skip
        tb = tb.tb_next
    entries = entries[skip:]
    if len(entries) > _MAX_FRAMES:
        entries = entries[: _MAX_FRAMES // 2] + entries[-_MAX_FRAMES // 2 :]
    frames = [(file, line, name, _source_line(frame, file, line)) for frame, line, file, name in entries]
    notes = getattr(e, "__notes__", None)
    members = group_message = None
    if isinstance(e, BaseExceptionGroup):
        members = [index[id(m)] for m in e.exceptions if id(m) in index]
        group_message = _text(e.message)
    return (
        _text(cls.__module__, _MAX_NAME),
        _text(cls.__qualname__, _MAX_NAME),
        not isinstance(e, Exception),
        code,
        _message(e),
        _pickled(args),
        _pickled(state) if state else None,
        [_text(d) for d in _own_denials(e)],
        [_text(d) for d in sandbox_denials(e)],
        frames,
        index.get(id(e.__cause__)) if e.__cause__ is not None else None,
        index.get(id(e.__context__)) if e.__context__ is not None else None,
        bool(e.__suppress_context__),
        [_text(n) for n in notes[:_MAX_NOTES]] if isinstance(notes, list) else None,
        members,
        group_message,
    )


def _minimal_entry(exc: BaseException, failure: BaseException) -> tuple[object, ...]:
    cls = type(exc)
    try:
        module, qualname = _text(cls.__module__, _MAX_NAME), _text(cls.__qualname__, _MAX_NAME)
    except Exception:
        module, qualname = "builtins", "BaseException"
    message = f"{_message(exc)} (describing the exception failed: {type(failure).__name__})"
    base_only = not isinstance(exc, Exception)
    return (
        module,
        qualname,
        base_only,
        None,
        message,
        None,
        None,
        [],
        [],
        [],
        None,
        None,
        False,
        None,
        None,
        None,
    )


def decode_exception(blob: bytes | bytearray | memoryview, deadline: float | None = None) -> BaseException:
    """Host side: rebuild the exception :func:`encode_exception` described.

    Builtin exceptions, PySandboxes' own, and ``Exception`` subclasses of modules the host has
    loaded (with arguments the data-only guard accepts) are rebuilt as themselves; anything
    else becomes :class:`SandBoxRemoteError`, and a ``BaseException`` that is not an
    ``Exception`` becomes :class:`SandBoxBaseExceptionError`. Each carries the child's
    denials (``__sandbox_denials__``) and a traceback of the child's frames. Garbage raises
    :class:`SandBoxProtocolError` and nothing else (:class:`LateResult` past ``deadline``).
    """
    try:
        description = loads_result(blob, mode=DATA_ONLY, max_depth=8, deadline=deadline)
        entries = _validate_description(description)
        return _rebuild(entries, deadline)
    except (SandBoxProtocolError, LateResult):
        raise
    except Exception as exc:
        raise SandBoxProtocolError(
            f"the sandbox sent a malformed exception ({type(exc).__name__}: {exc})"
        ) from exc


class _Entry:
    __slots__ = (
        "args", "base_only", "cause", "chain_denials", "code", "context", "denials", "frames",
        "group_message", "members", "message", "module", "notes", "qualname", "state", "suppress",
    )  # fmt: skip

    module: str
    qualname: str
    base_only: bool
    code: int | str | None
    message: str
    args: bytes | None
    state: bytes | None
    denials: list[str]
    chain_denials: list[str]
    frames: list[tuple[str, int, str, str]]
    cause: int | None
    context: int | None
    suppress: bool
    notes: list[str] | None
    members: list[int] | None
    group_message: str | None


def _bad(what: str) -> SandBoxProtocolError:
    return SandBoxProtocolError(f"the sandbox sent a malformed exception: {what}")


def _str(value: object, what: str, limit: int) -> str:
    if type(value) is not str or len(value) > limit:
        raise _bad(f"{what} is not a string of at most {limit} characters")
    return value


def _strs(value: object, what: str, count: int) -> list[str]:
    if type(value) is not list or len(value) > count:
        raise _bad(f"{what} is not a list of at most {count} strings")
    return [_str(v, what, _MAX_MESSAGE + 100) for v in value]


def _index(value: object, what: str, count: int) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 <= value < count:
        raise _bad(f"{what} is not an exception index")
    return value


def _validate_description(description: object) -> list[_Entry]:
    if type(description) is not tuple or len(description) != 3 or description[:2] != (_MAGIC, _VERSION):
        raise _bad("unknown format")
    raw = description[2]
    if type(raw) is not list or not 1 <= len(raw) <= _MAX_EXCEPTIONS:
        raise _bad(f"not a list of 1 to {_MAX_EXCEPTIONS} exceptions")
    count = len(raw)
    entries: list[_Entry] = []
    for item in raw:
        if type(item) is not tuple or len(item) != 16:
            raise _bad("an exception entry has the wrong shape")
        entry = _Entry()
        entry.module = _str(item[0], "a module name", _MAX_NAME)
        entry.qualname = _str(item[1], "a class name", _MAX_NAME)
        if type(item[2]) is not bool or type(item[12]) is not bool:
            raise _bad("a flag is not a boolean")
        entry.base_only, entry.suppress = item[2], item[12]
        code = item[3]
        if not (
            code is None
            or type(code) in (int, bool)
            or (type(code) is str and len(code) <= _MAX_MESSAGE + 100)
        ):
            raise _bad("an exit code is neither an int, a string nor None")
        if type(code) is int and code.bit_length() > 64:
            raise _bad("an exit code is out of range")
        entry.code = code
        entry.message = _str(item[4], "a message", _MAX_MESSAGE + 100)
        for position, name in ((5, "args"), (6, "state")):
            if not (
                item[position] is None or (type(item[position]) is bytes and len(item[position]) <= _MAX_ARGS)
            ):
                raise _bad(f"{name} are not a pickle of at most {_MAX_ARGS} bytes")
        entry.args, entry.state = item[5], item[6]
        entry.denials = _strs(item[7], "denials", 1000)
        entry.chain_denials = _strs(item[8], "denials", 1000)
        frames = item[9]
        if type(frames) is not list or len(frames) > _MAX_FRAMES:
            raise _bad(f"a traceback is not a list of at most {_MAX_FRAMES} entries")
        entry.frames = []
        for frame in frames:
            if type(frame) is not tuple or len(frame) != 4:
                raise _bad("a traceback entry is not (file, line, function, source line)")
            line = frame[1]
            if type(line) is not int or not 0 <= line < 1 << 31:
                raise _bad("a traceback line number is out of range")
            entry.frames.append(
                (_str(frame[0], "a file name", _MAX_NAME), line, _str(frame[2], "a function name", _MAX_NAME),
                 _str(frame[3], "a source line", _MAX_SOURCE + 100))
            )  # fmt: skip
        entry.cause = _index(item[10], "a cause", count)
        entry.context = _index(item[11], "a context", count)
        entry.notes = None if item[13] is None else _strs(item[13], "notes", _MAX_NOTES)
        members = item[14]
        if members is None:
            entry.members = None
        elif type(members) is list and len(members) <= _MAX_EXCEPTIONS:
            entry.members = [_index(m, "a group member", count) for m in members]  # type: ignore[misc]
            if None in entry.members:
                raise _bad("a group member is not an exception index")
        else:
            raise _bad("group members are not a list of exception indexes")
        entry.group_message = (
            None if item[15] is None else _str(item[15], "a group message", _MAX_MESSAGE + 100)
        )
        entries.append(entry)
    return entries


def _rebuild(entries: list[_Entry], deadline: float | None = None) -> BaseException:
    built: list[BaseException | None] = [None] * len(entries)
    building: set[int] = set()

    def build(position: int) -> BaseException:
        done = built[position]
        if done is not None:
            return done
        if position in building:
            raise _bad("exception group members form a cycle")
        building.add(position)
        entry = entries[position]
        members = [build(m) for m in entry.members or ()]  # type: ignore[union-attr]
        exc = _construct(entry, members, deadline)
        building.discard(position)
        built[position] = exc
        return exc

    for position in range(len(entries)):
        build(position)
    result: list[BaseException] = [b for b in built if b is not None]
    for entry, exc in zip(entries, result, strict=True):
        exc.__sandbox_denials__ = list(entry.denials)  # type: ignore[attr-defined]
        notes = [_traceback_note(entry.frames)] if entry.frames else []
        if entry.notes or notes:
            exc.__notes__ = notes + list(entry.notes or ())
        exc.__traceback__ = None  # the child's frames are text: no frame here names a child's file
    # __cause__ / __context__, without closing a cycle (a hostile child could send one).
    for entry, exc in zip(entries, result, strict=True):
        for target, attr in ((entry.cause, "__cause__"), (entry.context, "__context__")):
            if target is not None and not _reaches(result[target], exc):
                setattr(exc, attr, result[target])
        exc.__suppress_context__ = entry.suppress
    return result[0]


def _reaches(start: BaseException, goal: BaseException) -> bool:
    seen: set[int] = set()
    pending = [start]
    while pending:
        current = pending.pop()
        if current is goal:
            return True
        if id(current) in seen:
            continue
        seen.add(id(current))
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def _construct(entry: _Entry, members: list[BaseException], deadline: float | None) -> BaseException:
    type_name = f"{entry.module}.{entry.qualname}"
    if entry.base_only:
        return SandBoxBaseExceptionError(type_name, entry.code, entry.message)
    cls = _resolve(entry.module, entry.qualname) if "<" not in entry.qualname else _MISSING
    if isinstance(cls, type) and issubclass(cls, Exception):
        lenient = entry.module == "builtins" or entry.module.partition(".")[0] == "pysandboxes"
        exc = _instantiate(cls, entry, members, lenient, deadline)
        if exc is not None:
            return exc
    return SandBoxRemoteError(type_name, entry.message, entry.chain_denials)


def _decode_plain(blob: bytes | None, deadline: float | None) -> object:
    if blob is None:
        return _MISSING
    try:
        return loads_result(blob, mode=DATA_ONLY, deadline=deadline)
    except RestrictedUnpicklingError:
        return _MISSING


def _instantiate(
    cls: type[Exception], entry: _Entry, members: list[BaseException], lenient: bool, deadline: float | None
) -> Exception | None:
    attempts: list[tuple[object, ...]] = []
    if issubclass(cls, BaseExceptionGroup):
        if members and entry.group_message is not None:
            attempts.append((entry.group_message, members))
    else:
        args = _decode_plain(entry.args, deadline)
        if type(args) is tuple:
            attempts.append(args)
        if lenient:
            attempts.append((entry.message,))
    for args in attempts:
        try:
            exc = cls(*args)
        except Exception:
            continue
        if isinstance(exc, Exception):
            state = _decode_plain(entry.state, deadline)
            if type(state) is dict:
                attrs = getattr(exc, "__dict__", None)
                if isinstance(attrs, dict):
                    attrs.update(
                        (k, v) for k, v in state.items() if type(k) is str and not k.startswith("__")
                    )
            return exc
    return None


#: the first line of the note that carries the child's traceback
TRACEBACK_NOTE = "Traceback in the sandbox (most recent call last):"


def _traceback_note(frames: list[tuple[str, int, str, str]]) -> str:
    """The child's frames as ``traceback`` prints frames, from the text the child sent.

    A note, not frame objects: a frame naming a file makes every traceback printer open that
    file *on the host* for its source line (``linecache``, and the interpreter's own printer
    for an uncaught exception), and the file is whatever the child named (a host
    ``settings.py`` it could never read). A note is printed as it is, by both. Characters
    that would move a terminal's cursor or start a new line are shown escaped.
    """
    lines = [TRACEBACK_NOTE]
    for filename, line, name, source in frames:
        lines.append(f'  File "{_printable(filename)}", line {line}, in {_printable(name)}')
        if source:
            lines.append(f"    {_printable(source)}")
    return "\n".join(lines)


def _printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
