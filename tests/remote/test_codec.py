"""The partial-mode codec: what crosses between the host and the sandboxed child.

Results and exceptions come from a child that may run hostile code: every payload here is
built the way such a child could build it (``pickle.dumps`` of objects with a crafted
``__reduce__``, or raw opcodes), and must be refused without running anything.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import dataclasses
import datetime
import decimal
import fractions
import functools
import io
import ipaddress
import operator
import os
import pathlib
import pickle
import pickletools
import re
import struct
import subprocess
import sys
import time
import traceback
import types
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysandboxes.errors import (
    RestrictedUnpicklingError,
    RuleApiPermissionError,
    RuleFileNotFoundError,
    SandBoxBaseExceptionError,
    SandBoxError,
    SandBoxProtocolError,
    SandBoxRemoteError,
    SandBoxTimeoutError,
    sandbox_denials,
)
from pysandboxes.remote import codec

DATA_ONLY_MESSAGE = (
    "is refused by the sandbox's result guard: the result channel accepts only values "
    "(remote-result-mode=data-only); return plain data, or set remote-result-mode=objects in the rule file"
)
DATA_ONLY = re.escape(DATA_ONLY_MESSAGE)


def roundtrip(value: object, **options: object) -> object:
    data, buffers = codec.dumps(value, max_size=1 << 30)
    return codec.loads_result(data, [b.raw() for b in buffers], **options)  # type: ignore[arg-type]


def call_pickle(module: str, name: str, args: tuple[object, ...] = ()) -> bytes:
    """A pickle calling ``module.name(*args)``, whatever ``module.name`` is (raw opcodes)."""
    body = pickle.dumps(args, 2)[2:-1]  # without PROTO and STOP
    return b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n" + body + b"R."


class Gadget:
    """What a hostile child returns: unpickling it calls ``target(*args)`` in the host."""

    def __init__(self, target: object, *args: object) -> None:
        self.target = target
        self.args = args

    def __reduce__(self) -> tuple[object, ...]:
        return (self.target, self.args)


# -- a module the host has loaded, with application classes ---------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: str = ""


class AppError(Exception):
    """A plain application exception."""


class AppErrorWithCode(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message, code)
        self.code = code


class NeedsTwoArgs(Exception):
    def __init__(self, a: object, b: object) -> None:
        super().__init__(a)  # args=(a,): cls(*args) fails host-side
        self.b = b


class Counted:
    instances = 0

    def __init__(self, value: int) -> None:
        type(self).instances += 1  # a class attribute changes while the result loads
        self.value = value

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.value,))


@pytest.fixture
def app_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """``sandbox_app``: a module loaded in the host, holding application classes."""
    module = types.ModuleType("sandbox_app")
    for cls in (Point, AppError, AppErrorWithCode, NeedsTwoArgs, Counted):
        cls.__module__ = "sandbox_app"
        setattr(module, cls.__name__, cls)
    monkeypatch.setitem(sys.modules, "sandbox_app", module)
    return module


# -- dumps ----------------------------------------------------------------------------------


def test_dumps_is_pickle_protocol_5_with_out_of_band_buffers():
    data, buffers = codec.dumps({"a": 1, "b": [1, 2, 3]}, max_size=1000)
    assert data.startswith(b"\x80\x05") and buffers == []
    big = pickle.PickleBuffer(bytearray(b"x" * 5000))
    data, buffers = codec.dumps(big, max_size=10_000)
    assert len(buffers) == 1 and len(data) < 100
    assert bytes(codec.loads_trusted(data, [b.raw() for b in buffers])) == b"x" * 5000


def test_dumps_refuses_more_than_max_size_counting_the_buffers():
    with pytest.raises(SandBoxProtocolError, match=r"bytes exceeds remote-max-payload=100$"):
        codec.dumps(b"x" * 200, max_size=100)
    with pytest.raises(SandBoxProtocolError, match=r"\d+ bytes exceeds remote-max-payload=4000"):
        codec.dumps(pickle.PickleBuffer(bytearray(5000)), max_size=4000)


def make_closure():
    return lambda: 1


def test_dumps_names_what_cannot_be_pickled_and_why():
    with pytest.raises(SandBoxProtocolError) as caught:
        codec.dumps({"key": [1, make_closure()]}, max_size=1000)
    message = str(caught.value)
    assert message.startswith("cannot send make_closure.<locals>.<lambda> to the sandbox: ")
    assert "functions and classes defined inside functions (and lambdas) cannot be pickled" in message
    assert not isinstance(caught.value, pickle.PicklingError)

    with pytest.raises(
        SandBoxProtocolError, match=r"cannot send a generator object back from the sandbox: generators"
    ):
        codec.dumps((i for i in range(3)), max_size=1000, direction="back from the sandbox")
    import threading

    with pytest.raises(
        SandBoxProtocolError, match=r"cannot send a _thread.lock object to the sandbox: TypeError"
    ):
        codec.dumps([threading.Lock()], max_size=1000)


def test_dumps_of_a_value_nested_too_deeply():
    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    with pytest.raises(SandBoxProtocolError, match="nested too deeply"):
        codec.dumps(nested, max_size=1 << 30)


# -- data-only: values round-trip -------------------------------------------------------------

VALUES = [
    None,
    True,
    -(10**40),
    1.5,
    complex(1, -2),
    "text",
    b"bytes",
    bytearray(b"ba"),
    [1, [2]],
    (1, (2,)),
    {"a": {"b": 1}},
    {1, 2},
    frozenset({3}),
    datetime.date(2020, 1, 2),
    datetime.time(1, 2, 3, 4),
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6),
    datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC),
    datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=-3), "X")),
    datetime.timedelta(days=-1, seconds=5),
    datetime.UTC,
    decimal.Decimal("-1.50"),
    decimal.Decimal("NaN"),
    fractions.Fraction(-7, 3),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    uuid.UUID(int=5, is_safe=uuid.SafeUUID.safe),
    pathlib.PurePath("a/b"),
    pathlib.PurePosixPath("/a/b"),
    pathlib.PureWindowsPath(r"C:\x\y"),
    pathlib.Path("/tmp/x"),
    pathlib.PosixPath("rel"),
    ipaddress.IPv4Address("10.1.2.3"),
    ipaddress.IPv6Address("fe80::1%eth0"),
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv6Network("2001:db8::/32"),
    ipaddress.IPv4Interface("10.0.0.1/8"),
    ipaddress.IPv6Interface("::1/128"),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.Counter("abracadabra"),
    collections.deque([1, 2, 3], maxlen=5),
    {pathlib.PurePosixPath("/k"): [datetime.date(2000, 1, 1), {decimal.Decimal(1)}]},
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_each_allowed_type_round_trips_in_data_only_mode(value):
    copy = roundtrip(value)
    assert type(copy) is type(value)
    assert copy == value or (isinstance(value, decimal.Decimal) and value.is_nan() and copy.is_nan())
    assert str(copy) == str(value)
    if isinstance(value, uuid.UUID):
        assert copy.is_safe is value.is_safe
    if isinstance(value, collections.deque):
        assert copy.maxlen == value.maxlen


def test_each_value_class_needs_only_its_own_name(monkeypatch):
    """Per type, the exact globals protocol 5 names: the closed list holds nothing more."""
    needed = set()
    for value in VALUES:
        for opcode, arg, _ in pickletools.genops(pickle.dumps(value, 5)):
            if opcode.name in ("GLOBAL", "STACK_GLOBAL"):
                needed.add(arg)
    names = {f"{m}.{n}" for m, n in codec._VALUE_CLASSES}
    assert {"copyreg._reconstructor", "copyreg.__newobj__", "uuid.SafeUUID"}.isdisjoint(names)
    for module, name in codec._VALUE_CLASSES:
        if module != "pathlib._local" and name not in ("PurePath", "Path", "WindowsPath"):
            assert module in sys.modules


def test_shared_and_cyclic_parts_are_kept():
    shared = [1, 2]
    value = {"x": shared, "y": shared}
    copy = roundtrip(value)
    assert copy["x"] is copy["y"]
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    copy = roundtrip(cyclic)
    assert copy[1] is copy
    ring: dict[str, object] = {}
    ring["self"] = [ring, (ring,)]
    copy = roundtrip(ring)
    assert copy["self"][0] is copy


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_is_bounded_by_max_depth():
    assert roundtrip(nested(256)) == nested(256)
    with pytest.raises(RestrictedUnpicklingError, match="nested deeper than 256 levels"):
        roundtrip(nested(257))
    with pytest.raises(RestrictedUnpicklingError, match="nested deeper than 10 levels"):
        roundtrip(nested(11), max_depth=10)
    roundtrip(nested(10), max_depth=10)


def test_depth_counts_the_deepest_path_to_a_shared_container():
    # The deep part is reached first through a short path, then again through a long one.
    deep = nested(200)
    chain: object = deep
    for _ in range(100):
        chain = [chain]
    with pytest.raises(RestrictedUnpicklingError, match="nested deeper than 256"):
        roundtrip([deep, chain])
    roundtrip([deep, [[deep]]])


def test_a_container_referenced_a_million_times_is_examined_once():
    big = list(range(10_000))
    payload = pickle.dumps([big] * 1_000_000, 5)  # a few MB of BINGET, 10**10 items if walked
    assert len(roundtrip_raw(payload)) == 1_000_000


def roundtrip_raw(payload: bytes, **options: object) -> object:
    return codec.loads_result(payload, **options)  # type: ignore[arg-type]


@st.composite
def data_values(draw: st.DrawFn) -> object:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(),
        st.binary(),
        st.datetimes(),
        st.decimals(allow_nan=False),
        st.fractions(),
        st.uuids(),
        st.complex_numbers(allow_nan=False),
    )
    return draw(
        st.recursive(
            leaves,
            lambda inner: st.one_of(
                st.lists(inner, max_size=4),
                st.tuples(inner, inner),
                st.dictionaries(st.text(max_size=5), inner, max_size=4),
                st.frozensets(st.integers(), max_size=4),
            ),
            max_leaves=20,
        )
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_values())
def test_data_round_trips(value):
    assert roundtrip(value) == value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_values(), st.sampled_from(["data-only", "objects"]))
def test_the_guarded_decoder_decodes_what_the_c_one_does(value, mode):
    # The pure-Python unpickler that checks keys (taken for results whose keys a child could
    # aim) returns the same values, and refuses the same classes, as the C one.
    data = pickle.dumps(value, 5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_careful", lambda flags, size: True)
        guarded = codec.loads_result(data, mode=mode)
    assert guarded == codec.loads_result(data, mode=mode) == value


# -- data-only: refusals ----------------------------------------------------------------------


def test_an_os_system_gadget_is_refused_in_both_modes_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Gadget(os.system, f"touch {marker}"), 5)
    for mode in ("data-only", "objects"):
        with pytest.raises(RestrictedUnpicklingError) as caught:
            codec.loads_result(payload, mode=mode)
        assert str(caught.value).startswith(
            f"{os.system.__module__}.system is refused by the sandbox's result guard"
        )
    assert str(caught.value).endswith("module posix is denied (remote-result-mode=objects)")
    assert not marker.exists()
    pickle.loads(payload)  # the payload is live: the guard is what stops it
    assert marker.exists()


GADGETS = {
    "builtins.eval": call_pickle("builtins", "eval", ("__import__('os').getcwd()",)),
    "builtins.exec": pickle.dumps(Gadget(builtins.exec, "x = 1"), 5),
    "builtins.getattr": pickle.dumps(Gadget(getattr, pathlib.Path, "unlink"), 5),
    "builtins.__import__": call_pickle("builtins", "__import__", ("os",)),
    "builtins.open": call_pickle("builtins", "open", ("/etc/hostname",)),
    "builtins.type": call_pickle("builtins", "type", ("X", (), {})),
    "builtins.object": call_pickle("builtins", "object"),
    "subprocess.Popen": pickle.dumps(Gadget(subprocess.Popen, ["true"]), 5),
    "functools.partial": pickle.dumps(Gadget(functools.partial, print, "x"), 5),
    "operator.attrgetter": pickle.dumps(Gadget(operator.attrgetter, "system"), 5),
    "types.FunctionType": call_pickle("types", "FunctionType", ()),
    "types.CodeType": call_pickle("types", "CodeType", ()),
    "copyreg._reconstructor": call_pickle("copyreg", "_reconstructor", ()),
    "copyreg.__newobj__": call_pickle("copyreg", "__newobj__", ()),
    "pathlib.Path.unlink": call_pickle("pathlib", "Path.unlink", ("/tmp/never-there",)),
    "pathlib.Path.write_text": call_pickle("pathlib", "Path.write_text", ()),
    "os.path.join": call_pickle("os.path", "join", ("a",)),
    "sys.modules": call_pickle("sys", "modules"),
    "builtins.range": call_pickle("builtins", "range", (10,)),
    "builtins.bytearray": call_pickle("builtins", "bytearray", (10**12,)),
    "uuid.SafeUUID": call_pickle("uuid", "SafeUUID", (0,)),
    "pickle.loads": call_pickle("pickle", "loads", (b"N.",)),
    "collections.OrderedDict.fromkeys": call_pickle("collections", "OrderedDict.fromkeys", ((1,),)),
}


@pytest.mark.parametrize("name", list(GADGETS))
def test_each_gadget_is_refused_in_data_only_mode_with_the_hint(name):
    with pytest.raises(RestrictedUnpicklingError) as caught:
        codec.loads_result(GADGETS[name])
    assert str(caught.value).endswith(DATA_ONLY_MESSAGE)
    assert isinstance(caught.value, pickle.UnpicklingError) and isinstance(caught.value, SandBoxError)


@pytest.mark.parametrize(
    "name", [n for n in GADGETS if n not in ("builtins.range", "builtins.bytearray", "uuid.SafeUUID")]
)
def test_each_gadget_is_refused_in_objects_mode(name):
    with pytest.raises(RestrictedUnpicklingError, match="is refused by the sandbox's result guard"):
        codec.loads_result(GADGETS[name], mode="objects")


def test_a_class_as_a_value_is_refused_in_data_only_mode():
    for value in (datetime.date, uuid.UUID, pathlib.Path, collections.Counter):
        name = f"{value.__module__}.{value.__qualname__}"
        with pytest.raises(RestrictedUnpicklingError, match=rf"^the class {name} {DATA_ONLY}$"):
            roundtrip(value)


def test_application_objects_are_refused_in_data_only_mode(app_module):
    with pytest.raises(RestrictedUnpicklingError, match=rf"^sandbox_app.Point {DATA_ONLY}$"):
        roundtrip(app_module.Point(1, 2))
    with pytest.raises(RestrictedUnpicklingError, match=rf"^builtins.ValueError {DATA_ONLY}$"):
        roundtrip(ValueError("x"))


class MyDict(dict):  # type: ignore[type-arg]
    pass


class MyPath(pathlib.PurePosixPath):
    pass


def test_subclasses_of_value_types_are_refused(app_module):
    for cls in (MyDict, MyPath):
        cls.__module__ = "sandbox_app"
        setattr(app_module, cls.__name__, cls)
        with pytest.raises(RestrictedUnpicklingError, match=rf"^sandbox_app.{cls.__name__} {DATA_ONLY}$"):
            roundtrip(cls())
    with pytest.raises(RestrictedUnpicklingError, match=rf"^builtins.str {DATA_ONLY}$"):
        codec.loads_result(call_pickle("builtins", "str", ("x",)))


def test_a_class_of_a_module_the_host_did_not_load_is_refused_without_importing(monkeypatch):
    payload = pickle.dumps(fractions.Fraction(1, 3), 5)
    monkeypatch.delitem(sys.modules, "fractions")
    with pytest.raises(RestrictedUnpicklingError, match="module fractions is not loaded in the host"):
        codec.loads_result(payload)
    assert "fractions" not in sys.modules


def test_a_memoryview_is_not_a_data_only_value():
    data, buffers = codec.dumps(pickle.PickleBuffer(b"abc"), max_size=100)  # read-only: a memoryview
    with pytest.raises(RestrictedUnpicklingError, match="a memoryview value"):
        codec.loads_result(data, [b.raw() for b in buffers])
    data, buffers = codec.dumps(pickle.PickleBuffer(bytearray(b"abc")), max_size=100)
    assert codec.loads_result(data, [bytearray(b.raw()) for b in buffers]) == bytearray(b"abc")


# -- BUILD, NEWOBJ and friends on the allowed classes ----------------------------------------


def build_pickle(constructor: bytes, state: object) -> bytes:
    """``constructor`` (a pickle building one object, without STOP) then ``BUILD state``."""
    body = pickle.dumps(state, 2)[2:-1]  # its BINPUTs overwrite memo slots nothing reads again
    return constructor + body + b"b."


def path_pickle() -> bytes:
    return call_pickle("pathlib", "PurePosixPath", ("/tmp", "x"))[:-1]


def test_build_with_slot_state_cannot_spoof_a_path():
    spoofed = build_pickle(path_pickle(), (None, {"_str": "/etc/passwd", "_hash": 1, "_parts": ["/", "etc"]}))
    value = codec.loads_result(spoofed)
    assert type(value) is pathlib.PurePosixPath
    assert str(value) == "/tmp/x" and value.parts == ("/", "tmp", "x")
    assert hash(value) == hash(pathlib.PurePosixPath("/tmp/x"))
    assert os.fspath(value) == "/tmp/x"


def test_build_cannot_change_the_class_of_a_value():
    spoofed = build_pickle(path_pickle(), (None, {"__class__": pathlib.PureWindowsPath}))
    # PureWindowsPath here is a constructor the guard made, not the class: refused either way
    with pytest.raises(RestrictedUnpicklingError):
        codec.loads_result(spoofed)


def test_build_cannot_add_attributes_to_a_counter():
    counter = call_pickle("collections", "Counter", ({"a": 1},))[:-1]
    value = codec.loads_result(build_pickle(counter, {"most_common": 1, "x": 2}))
    assert type(value) is collections.Counter and value == collections.Counter(a=1)
    assert vars(value) == {} and value.most_common() == [("a", 1)]


def test_build_cannot_unnormalize_a_fraction_or_an_address():
    fraction = call_pickle("fractions", "Fraction", ("2/4",))[:-1]
    value = codec.loads_result(build_pickle(fraction, (None, {"_numerator": 2, "_denominator": 0})))
    assert value == fractions.Fraction(1, 2) and value.denominator == 2
    network = call_pickle("ipaddress", "IPv4Network", ("10.0.0.0/8",))[:-1]
    value = codec.loads_result(build_pickle(network, {"netmask": None, "broadcast_address": "x"}))
    assert str(value.netmask) == "255.0.0.0" and str(value.broadcast_address) == "10.255.255.255"


def test_build_on_a_datetime_is_refused():
    date = call_pickle("datetime", "date", (2020, 1, 2))[:-1]
    with pytest.raises(RestrictedUnpicklingError, match="malformed result"):
        codec.loads_result(build_pickle(date, {"year": 1999}))
    with pytest.raises(RestrictedUnpicklingError, match="malformed result"):
        codec.loads_result(build_pickle(date, (None, {"year": 1999})))


def test_build_on_a_class_is_refused():
    # GLOBAL Fraction, BUILD → would set Fraction.<attr> for the whole host.
    payload = (
        b"\x80\x02cfractions\nFraction\n" + pickle.dumps((None, {"limit_denominator": 1}), 2)[2:-1] + b"b."
    )
    with pytest.raises(
        RestrictedUnpicklingError, match=re.escape("BUILD on the class fractions.Fraction is refused")
    ):
        codec.loads_result(payload)
    assert callable(fractions.Fraction.limit_denominator)
    payload = b"\x80\x02cuuid\nUUID\n" + pickle.dumps({"int": 1}, 2)[2:-1] + b"b."
    with pytest.raises(RestrictedUnpicklingError):
        codec.loads_result(payload)
    assert "int" not in vars(uuid.UUID) or not isinstance(vars(uuid.UUID)["int"], int)


def test_newobj_on_a_value_class_is_refused_but_uuid():
    payload = b"\x80\x02cfractions\nFraction\n)\x81."
    with pytest.raises(RestrictedUnpicklingError, match="NEWOBJ class argument must be a type"):
        codec.loads_result(payload)
    bare_uuid = b"\x80\x02cuuid\nUUID\n)\x81."
    with pytest.raises(RestrictedUnpicklingError, match="invalid state"):
        codec.loads_result(bare_uuid)


@pytest.mark.parametrize("state", [{"int": -1}, {"int": 1 << 128}, {"int": "x"}, {"int": True}])
def test_a_uuid_with_a_hostile_state_is_refused(state):
    payload = b"\x80\x02cuuid\nUUID\n)\x81" + pickle.dumps(state, 2)[2:-1] + b"b."
    with pytest.raises(RestrictedUnpicklingError, match=re.escape("uuid.UUID with an invalid state")):
        codec.loads_result(payload)


@pytest.mark.parametrize("text", ["1e999999999", "1.5", " 1", "1/3e5", "١/٣", "nan", "1_000"])
def test_fraction_arguments_are_only_what_pickle_writes(text):
    with pytest.raises(RestrictedUnpicklingError, match="numerator/denominator"):
        codec.loads_result(call_pickle("fractions", "Fraction", (text,)))
    assert codec.loads_result(call_pickle("fractions", "Fraction", ("-12/5",))) == fractions.Fraction(-12, 5)
    assert codec.loads_result(call_pickle("fractions", "Fraction", (3, 4))) == fractions.Fraction(3, 4)


def test_a_windows_path_on_posix_is_a_malformed_result_not_a_crash():
    with pytest.raises(RestrictedUnpicklingError, match="malformed result"):
        codec.loads_result(call_pickle("pathlib", "WindowsPath", ("c:/",)))


# -- the prescan: memo bombs, extensions, garbage --------------------------------------------


def test_a_memo_bomb_is_refused_before_any_allocation():
    for payload in (
        b"\x80\x05N" + b"r" + struct.pack("<I", 1 << 30) + b".",  # LONG_BINPUT
        b"\x80\x05N" + b"p1073741824\n.",  # PUT
        b"\x80\x05N" + b"p1073741824\x00junk\n.",  # the C unpickler stops at the NUL
        b"N" + b"p" + b"9" * 20 + b"\n.",
    ):
        with pytest.raises(RestrictedUnpicklingError, match="memo index"):
            codec.loads_result(payload)


def test_put_and_long_binput_of_old_protocols_still_load():
    value = [str(i) for i in range(1000)]
    assert codec.loads_result(pickle.dumps(value, 1)) == value  # LONG_BINPUT beyond 255
    assert codec.loads_result(pickle.dumps(value, 0)) == value  # PUT


def test_extension_codes_are_refused(monkeypatch):
    import copyreg

    with pytest.raises(RestrictedUnpicklingError, match="unregistered extension code"):
        codec.loads_result(b"\x80\x02\x82\x42.")  # none registered: the unpickler refuses it
    monkeypatch.setattr(copyreg, "_inverted_registry", {0x42: ("os", "system")})
    monkeypatch.setattr(copyreg, "_extension_cache", {0x42: os.system})  # skips find_class
    for mode in ("data-only", "objects"):
        with pytest.raises(RestrictedUnpicklingError, match="extension codes"):
            codec.loads_result(b"\x80\x02\x82\x42.", mode=mode)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b".",
        b"\x80",
        b"\x80\x05",
        b"\x80\x05\x8c\xff",
        b"(((((",
        b"\xff.",
        b"X\xff\xff\xff\x7f",
        b"N" * 5,
    ],
)
def test_garbage_is_a_restricted_unpickling_error(payload):
    with pytest.raises(RestrictedUnpicklingError):
        codec.loads_result(payload)


def test_prescan_layout_matches_pickletools():
    # A fixed-size opcode is its size, or a code the loop steps over by that size itself: -13
    # (one byte that says what the pickle builds), -14 (BINFLOAT) and -15 (FRAME), nine bytes.
    stepped = {-13: 1, -14: 9, -15: 9}
    for opcode in pickletools.opcodes:
        step = codec._STEP[ord(opcode.code.encode("latin-1"))]
        n = opcode.arg.n if opcode.arg else 0
        if n >= 0 and opcode.name not in ("STOP", "BUILD", "EXT1", "EXT2", "EXT4", "LONG_BINPUT"):
            assert stepped.get(step, step) == 1 + n, opcode.name
        else:
            assert step < 0 and step not in stepped, opcode.name


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from(["data-only", "objects"]))
def test_arbitrary_bytes_give_only_our_error(payload, mode):
    with contextlib.suppress(RestrictedUnpicklingError):
        codec.loads_result(payload, mode=mode)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_values(), st.data())
def test_mutated_pickles_give_a_value_or_our_error(value, data):
    payload = bytearray(pickle.dumps(value, 5))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(payload) - 1))
        payload[position] = data.draw(st.integers(0, 255))
    with contextlib.suppress(RestrictedUnpicklingError):
        codec.loads_result(bytes(payload))


# -- the decoder's work: hash collisions, amplification, time ----------------------------------
# A hostile child writes pickles that cost the host far more than their size: keys that all
# hash alike make a dict quadratic, a shared argument makes each constructor call a copy. The
# host decodes outside the call, so this work must stay proportional to the size, and stop at
# the call's deadline.

MERSENNE = (1 << 61) - 1  # hash(n) == n % MERSENNE for ints


def atom(value: object) -> bytes:
    """The opcodes pushing ``value`` (protocol 2: no frame, no memo)."""
    return pickle.dumps(value, 2)[2:-1]


def dict_pickle(keys: list[object], repeat_last: int = 0) -> bytes:
    """``{key: None for key in keys}`` as raw opcodes, the last key inserted again
    ``repeat_last`` times (each insertion then walks every key of its hash)."""
    body = b"".join(atom(k) + b"N" for k in keys)
    body += (atom(keys[-1]) + b"N") * repeat_last
    return b"\x80\x05}(" + body + b"u."


def set_pickle(keys: list[object]) -> bytes:
    return b"\x80\x05\x8f(" + b"".join(atom(k) for k in keys) + b"\x90."


def frozenset_pickle(keys: list[object]) -> bytes:
    return b"\x80\x05(" + b"".join(atom(k) for k in keys) + b"\x91."


COLLIDING = [1 + i * MERSENNE for i in range(1, 3001)]  # 3000 ints of one hash
ORDINARY = [1 + i * MERSENNE + i for i in range(1, 3001)]  # as large, 3000 hashes


@pytest.mark.parametrize("build", [dict_pickle, set_pickle, frozenset_pickle])
def test_keys_that_all_hash_alike_are_refused(build):
    with pytest.raises(RestrictedUnpicklingError, match="share a hash with another key"):
        codec.loads_result(build(COLLIDING))
    assert len(codec.loads_result(build(ORDINARY))) == 3000  # the same size, ordinary keys


def test_tuples_of_colliding_keys_are_refused():
    with pytest.raises(RestrictedUnpicklingError, match="share a hash with another key"):
        codec.loads_result(dict_pickle([(k,) for k in COLLIDING]))
    assert len(codec.loads_result(dict_pickle([(k,) for k in ORDINARY]))) == 3000


def test_a_key_inserted_again_and_again_is_refused():
    # Few distinct keys of one hash, then the last one again: each insertion walks them all.
    with pytest.raises(RestrictedUnpicklingError, match="share a hash with another key"):
        codec.loads_result(dict_pickle(COLLIDING[:30], repeat_last=100_000))
    assert codec.loads_result(dict_pickle(COLLIDING[:30])) == dict.fromkeys(COLLIDING[:30])


def test_minus_one_and_minus_two_share_a_hash_and_still_decode():
    keys = [-1, -2, 2**61 - 2, -(2**61) + 1, 0.5, 2.0**-61, 1, *range(10_000)]  # a few natural repeats
    assert codec.loads_result(pickle.dumps(dict.fromkeys(keys), 5)) == dict.fromkeys(keys)


def test_hashing_a_tuple_of_shared_tuples_is_refused():
    # (t, t) fifty-five times: 500 bytes, and hashing it (tuples do not cache their hash)
    # visits 2**55 items.
    shared: tuple[object, ...] = ()
    for _ in range(55):
        shared = (shared, shared)
    with pytest.raises(RestrictedUnpicklingError, match="far more work than its size"):
        codec.loads_result(b"\x80\x05}" + pickle.dumps(shared, 2)[2:-1] + b"K\x01s.")  # {shared: 1}
    small: tuple[object, ...] = ()
    for _ in range(8):
        small = (small, small)
    assert codec.loads_result(pickle.dumps({small: 1}, 5)) == {small: 1}  # 2**8 items: fine


def test_a_key_nested_deeper_than_max_depth_is_refused_before_it_is_hashed():
    # Hashing a tuple recurses in C: three million levels overflow the host's stack (SIGSEGV).
    deep = b"\x80\x05}N" + b"\x85" * 3_000_000 + b"Ns."  # {((((None,),),)...): None}
    with pytest.raises(RestrictedUnpicklingError, match="nested deeper than 256 levels"):
        codec.loads_result(deep)
    assert codec.loads_result(b"\x80\x05}N" + b"\x85" * 200 + b"Ns.")  # 200 levels: a value


def test_a_shared_argument_cannot_make_a_million_constructor_calls_copy_it():
    # One list of 20 000 items, memoized, given to 20 000 deques: 400 million copies.
    shared = b"(" + b"".join(atom(i) for i in range(20_000)) + b"l\x94"  # memo 0
    deque = b"\x8c\x0bcollections\x8c\x05deque\x93\x94"  # memo 1
    calls = b"(" + b"h\x01h\x00\x85R" * 20_000 + b"l"
    payload = b"\x80\x05" + shared + deque + b"0" + calls + b"."  # POP the shared list
    with pytest.raises(RestrictedUnpicklingError, match="far more work than its size"):
        codec.loads_result(payload)
    few = [collections.deque(range(i, i + 200)) for i in range(100)]  # each its own list
    assert codec.loads_result(pickle.dumps(few, 5)) == few


def test_a_frame_larger_than_the_pickler_writes_is_refused():
    framed = pickle.dumps(list(range(100_000)), 4)  # frames of about 64 KiB
    unframed = pickle.dumps(list(range(100_000)), 3)[2:]
    one_frame = b"\x80\x04\x95" + len(unframed).to_bytes(8, "little") + unframed  # 400 KB
    with pytest.raises(RestrictedUnpicklingError, match="a frame of more than 262144 bytes"):
        codec.loads_result(one_frame)
    assert codec.loads_result(framed) == list(range(100_000))


@pytest.mark.parametrize(
    "value",
    [
        list(range(200_000)),  # the C unpickler
        {i: (i,) for i in range(50_000)},  # the guarded one (tuples in a dict)
    ],
    ids=["c", "guarded"],
)
def test_decoding_stops_at_the_deadline(value):
    data = pickle.dumps(value, 5)
    with pytest.raises(codec.LateResult) as late:
        codec.loads_result(data, deadline=time.monotonic() - 1)  # already past
    assert isinstance(late.value, SandBoxTimeoutError) and isinstance(late.value, TimeoutError)
    assert codec.loads_result(data, deadline=time.monotonic() + 3600) == value


def test_decoding_an_exception_stops_at_the_deadline():
    blob = codec.encode_exception(raise_in_child(ValueError("x" * 60_000, list(range(30_000)))))
    with pytest.raises(codec.LateResult):
        codec.decode_exception(blob, deadline=time.monotonic() - 1)
    assert type(codec.decode_exception(blob, deadline=time.monotonic() + 3600)) is ValueError


# -- objects mode ------------------------------------------------------------------------------


def test_objects_mode_loads_application_classes(app_module):
    point = app_module.Point(1, 2, "a")
    copy = roundtrip({"p": point, "d": collections.defaultdict(list, a=[1])}, mode="objects")
    assert copy["p"] == point and type(copy["p"]) is app_module.Point
    assert copy["d"].default_factory is list


def test_objects_mode_refuses_classes_of_modules_not_loaded():
    payload = call_pickle("not_a_loaded_module_xyz", "Thing")
    with pytest.raises(RestrictedUnpicklingError, match="module not_a_loaded_module_xyz is not loaded"):
        codec.loads_result(payload, mode="objects")
    assert "not_a_loaded_module_xyz" not in sys.modules


def test_objects_mode_refuses_derived_classes_exceptions_and_metaclasses(app_module):
    class SneakyPopen(subprocess.Popen):  # type: ignore[type-arg]
        pass

    class Meta(type):
        pass

    for cls in (SneakyPopen, Meta):
        cls.__module__ = "sandbox_app"
        setattr(app_module, cls.__name__, cls)
    cases = {
        "SneakyPopen": re.escape("derives from) subprocess.Popen, from a denied module"),
        "Meta": "metaclasses are refused",
        "AppError": "exceptions are not results",
        "Point.__init__": "only classes are resolved",
        "Nothing": "has no class Nothing",
    }
    for name, why in cases.items():
        with pytest.raises(RestrictedUnpicklingError, match=why):
            codec.loads_result(call_pickle("sandbox_app", name, (["true"],)), mode="objects")


def test_objects_mode_undoes_and_refuses_a_build_on_a_class(app_module):
    before = app_module.Point.__init__
    payload = (
        b"\x80\x02csandbox_app\nPoint\n"
        + pickle.dumps((None, {"__init__": None, "injected": 1}), 2)[2:-1]
        + b"b."
    )
    with pytest.raises(
        RestrictedUnpicklingError, match=re.escape("tried to change the host classes sandbox_app.Point")
    ):
        codec.loads_result(payload, mode="objects")
    assert app_module.Point.__init__ is before and not hasattr(app_module.Point, "injected")


def test_objects_mode_keeps_class_changes_made_by_the_classes_themselves(app_module):
    start = app_module.Counted.instances
    copy = roundtrip([app_module.Counted(1), app_module.Counted(2)], mode="objects")
    assert [c.value for c in copy] == [1, 2]
    assert app_module.Counted.instances == start + 4  # two here, two while loading


class WithState:
    def __init__(self, value: int) -> None:
        Counted.instances += 1
        self.value = value

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.value,), {"extra": 1})  # REDUCE, then BUILD on the instance


def test_objects_mode_keeps_class_changes_alongside_builds_on_instances(app_module):
    WithState.__module__ = "sandbox_app"
    app_module.WithState = WithState
    start = app_module.Counted.instances
    copy = roundtrip([WithState(1), app_module.Point(1, 2)], mode="objects")
    assert copy[0].extra == 1 and copy[0].value == 1 and copy[1] == app_module.Point(1, 2)
    assert app_module.Counted.instances == start + 2


def test_guard_false_loads_anything_in_objects_mode_only():
    payload = pickle.dumps(os.getcwd, 5)
    assert codec.loads_result(payload, mode="objects", guard=False) is os.getcwd
    with pytest.raises(RestrictedUnpicklingError):
        codec.loads_result(payload, mode="data-only", guard=False)
    bomb = b"\x80\x05N" + b"r" + struct.pack("<I", 1 << 30) + b"."
    with pytest.raises(RestrictedUnpicklingError, match="memo index"):
        codec.loads_result(bomb, mode="objects", guard=False)


def test_an_unknown_mode_is_a_value_error():
    with pytest.raises(ValueError, match="remote-result-mode"):
        codec.loads_result(b"N.", mode="anything")


# -- exceptions --------------------------------------------------------------------------------


def raise_in_child(exc: BaseException) -> BaseException:
    """Raise ``exc`` from a nested function (the child's frames) and return it, raised."""

    def sandboxed_function() -> None:
        raise exc

    try:
        sandboxed_function()
    except BaseException as raised:
        return raised
    raise AssertionError("unreachable")


def through_channel(exc: BaseException, skip: int = 0) -> BaseException:
    return codec.decode_exception(codec.encode_exception(exc, skip=skip))


def test_a_builtin_exception_is_rebuilt_with_its_args():
    copy = through_channel(raise_in_child(ValueError("bad value", 42)))
    assert type(copy) is ValueError and copy.args == ("bad value", 42)
    copy = through_channel(raise_in_child(FileNotFoundError(2, "No such file", "/x")))
    assert type(copy) is FileNotFoundError and copy.filename == "/x" and copy.errno == 2
    copy = through_channel(raise_in_child(KeyError(object())))  # args do not pickle: the message
    assert type(copy) is KeyError


def test_our_refusals_are_rebuilt_and_keep_their_builtin_twin():
    copy = through_channel(
        raise_in_child(RuleFileNotFoundError("Access to '/etc/x' must be accepted by a rule.", "/etc/x"))
    )
    assert type(copy) is RuleFileNotFoundError and isinstance(copy, FileNotFoundError)
    assert str(copy) == "Access to '/etc/x' must be accepted by a rule." and copy.filename == "/etc/x"
    assert sandbox_denials(copy) == ["RuleFileNotFoundError: Access to '/etc/x' must be accepted by a rule."]
    copy = through_channel(raise_in_child(SandBoxTimeoutError("call f exceeded 5 s")))
    assert (
        type(copy) is SandBoxTimeoutError
        and isinstance(copy, TimeoutError)
        and str(copy) == "call f exceeded 5 s"
    )
    assert sandbox_denials(copy) == []


def test_an_exception_class_of_a_host_loaded_module_is_rebuilt(app_module):
    copy = through_channel(raise_in_child(app_module.AppError("app failed")))
    assert type(copy) is app_module.AppError and copy.args == ("app failed",)
    copy = through_channel(raise_in_child(app_module.AppErrorWithCode("failed", 7)))
    assert type(copy) is app_module.AppErrorWithCode and copy.code == 7


def test_an_exception_whose_class_cannot_be_rebuilt_becomes_a_remote_error(app_module):
    copy = through_channel(raise_in_child(app_module.NeedsTwoArgs("a", "b")))
    assert type(copy) is SandBoxRemoteError
    assert copy.exception_type == "sandbox_app.NeedsTwoArgs" and copy.message == "a"


def test_an_unknown_exception_class_becomes_a_remote_error_with_the_denials(monkeypatch):
    module = types.ModuleType("child_only_module")

    class ToolError(Exception):
        pass

    ToolError.__module__ = "child_only_module"
    ToolError.__qualname__ = "ToolError"
    module.ToolError = ToolError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "child_only_module", module)
    try:
        try:
            raise RuleApiPermissionError("os.system() is denied", "os.system", "process-exec")
        except PermissionError as refusal:
            raise ToolError("the tool failed") from refusal
    except ToolError as raised:
        blob = codec.encode_exception(raised)
    monkeypatch.delitem(sys.modules, "child_only_module")  # the host never loaded it
    copy = codec.decode_exception(blob)
    assert type(copy) is SandBoxRemoteError and isinstance(copy, SandBoxError)
    assert copy.exception_type == "child_only_module.ToolError" and copy.message == "the tool failed"
    assert str(copy) == "child_only_module.ToolError: the tool failed"
    assert copy.denials == ["RuleApiPermissionError: os.system() is denied"]
    assert type(copy.__cause__) is RuleApiPermissionError
    assert sandbox_denials(copy) == ["RuleApiPermissionError: os.system() is denied"]
    assert pickle.loads(pickle.dumps(copy)).denials == copy.denials


def test_a_hand_built_remote_error_lists_its_denials():
    error = SandBoxRemoteError("m.E", "msg", ["RuleFileNotFoundError: x"])
    assert sandbox_denials(error) == ["RuleFileNotFoundError: x"]
    assert str(SandBoxRemoteError("m.E")) == "m.E"


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (SystemExit(5), 5, "the sandboxed function raised builtins.SystemExit: 5"),
        (SystemExit("bye"), "bye", "the sandboxed function raised builtins.SystemExit: bye"),
        (SystemExit(), None, "the sandboxed function raised builtins.SystemExit"),
        (KeyboardInterrupt(), None, "the sandboxed function raised builtins.KeyboardInterrupt"),
        (GeneratorExit("g"), None, "the sandboxed function raised builtins.GeneratorExit: g"),
    ],
)
def test_a_base_exception_becomes_a_sandbox_base_exception_error(exc, code, text):
    copy = through_channel(raise_in_child(exc))
    assert type(copy) is SandBoxBaseExceptionError and isinstance(copy, Exception)
    assert copy.code == code and str(copy) == text
    assert copy.exception_type == f"builtins.{type(exc).__name__}"
    assert sandbox_denials(copy) == []
    assert str(pickle.loads(pickle.dumps(copy))) == text


def child_work() -> None:
    try:
        {}["missing"]
    except KeyError:
        try:
            raise RuleFileNotFoundError("Access to '/data' must be accepted by a rule.", "/data")
        except OSError as refusal:
            raise RuntimeError("tool failed") from refusal


def test_chained_exceptions_and_denials_survive():
    try:
        child_work()
    except RuntimeError as raised:
        expected = sandbox_denials(raised)
        copy = through_channel(raised)
    assert type(copy) is RuntimeError and str(copy) == "tool failed"
    assert type(copy.__cause__) is RuleFileNotFoundError and copy.__suppress_context__
    assert type(copy.__cause__.__context__) is KeyError and copy.__cause__.__context__.args == ("missing",)
    assert copy.__context__ is copy.__cause__
    assert (
        sandbox_denials(copy)
        == expected
        == ["RuleFileNotFoundError: Access to '/data' must be accepted by a rule."]
    )


def frames_shown(exc: BaseException) -> list[str]:
    """The function names of the child's frames, as the host shows them (a note)."""
    note = exc.__notes__[0]
    assert note.startswith(codec.TRACEBACK_NOTE + "\n")
    return re.findall(r'^  File ".*", line \d+, in (.*)$', note, re.MULTILINE)


def test_the_childs_frames_travel_as_text_with_their_source_lines():
    try:
        child_work()
    except RuntimeError as raised:
        expected = traceback.extract_tb(raised.__traceback__)
        copy = through_channel(raised)
    assert copy.__traceback__ is None  # no frame object names a file of the child
    lines = [codec.TRACEBACK_NOTE]
    for frame in expected:
        lines += [f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}', f"    {frame.line}"]
    assert copy.__notes__ == ["\n".join(lines)]
    shown = "".join(traceback.format_exception(copy))
    assert f'File "{__file__}", line ' in shown and ", in child_work" in shown
    assert 'raise RuntimeError("tool failed") from refusal' in shown
    assert '{}["missing"]' in "".join(traceback.format_exception(copy.__cause__.__context__))


def test_source_lines_are_read_without_linecache(monkeypatch):
    # The child does not import linecache (a few milliseconds at every start): it reads the
    # file itself when the program has not loaded linecache.
    def work() -> None:
        raise ValueError("x")  # the line shown

    try:
        work()
    except ValueError as raised:
        monkeypatch.setitem(sys.modules, "linecache", None)
        blob = codec.encode_exception(raised)
    monkeypatch.undo()
    note = codec.decode_exception(blob).__notes__[0]
    assert note.endswith(', in work\n    raise ValueError("x")  # the line shown')


def test_skip_drops_the_channels_leading_frames():
    def channel_frame() -> BaseException:
        return raise_in_child(ValueError("x"))

    raised = channel_frame()
    frames = traceback.extract_tb(raised.__traceback__)
    copy = through_channel(raised, skip=1)
    assert frames_shown(copy) == [f.name for f in frames[1:]]


def test_notes_and_exception_groups_survive():
    error = ValueError("inner")
    error.add_note("a note")
    group = ExceptionGroup("several", [error, TypeError("t")])
    copy = through_channel(raise_in_child(group))
    assert type(copy) is ExceptionGroup and copy.message == "several"
    assert [type(e) for e in copy.exceptions] == [ValueError, TypeError]
    assert copy.exceptions[0].__notes__ == ["a note"]


def test_an_exception_the_child_cannot_describe_still_arrives():
    class Hostile(Exception):
        def __reduce_ex__(self, protocol):  # type: ignore[no-untyped-def]
            raise RuntimeError("no")

        def __str__(self) -> str:
            raise RuntimeError("no")

    copy = through_channel(raise_in_child(Hostile()))
    assert type(copy) is SandBoxRemoteError and "str() failed" in copy.message


def test_a_file_the_child_names_is_never_read_by_the_host(tmp_path):
    # A child names host files in its traceback (a FIFO would block the host, /dev/zero eat
    # it, a key leak into the host's logs): the host shows the child's text and reads nothing.
    import linecache

    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    secret = tmp_path / "settings.py"
    secret.write_text("PASSWORD = 'hunter2'\n")
    frames = [
        (str(fifo), 1, "f", ""),
        ("/dev/zero", 2, "g", ""),
        ("relative.py", 3, "h", ""),
        (str(secret), 1, "i", ""),
        (__file__, 1, "j", "the child's text"),
        ('x.py\n  File "/etc/passwd"', 4, "k\x1b[2K", "\x1b]0;title\x07"),
    ]
    description = ("pysandboxes.exception", 2, [entry(frames=frames)])
    copy = codec.decode_exception(pickle.dumps(description, 5))
    text = "".join(traceback.format_exception(copy))
    assert f'File "{fifo}", line 1, in f\n  File "/dev/zero", line 2, in g\n' in text
    assert f'File "relative.py", line 3, in h\n  File "{secret}", line 1, in i\n' in text
    assert f'File "{__file__}", line 1, in j\n    the child\'s text\n' in text
    assert 'File "x.py\\n  File "/etc/passwd"", line 4, in k\\x1b[2K\n    \\x1b]0;title\\x07' in text
    assert "hunter2" not in text and "partial-mode codec" not in text
    assert not {str(fifo), "/dev/zero", "relative.py", str(secret)} & set(linecache.cache)


def entry(**changes: object) -> tuple[object, ...]:
    fields = dict(
        module="builtins", qualname="ValueError", base_only=False, code=None, message="m", args=None,
        state=None, denials=[], chain_denials=[], frames=[], cause=None, context=None, suppress=False,
        notes=None, members=None, group_message=None,
    )  # fmt: skip
    fields.update(changes)
    return tuple(fields.values())


@pytest.mark.parametrize(
    "description",
    [
        None,
        ("pysandboxes.exception", 1, [entry()]),  # the format before source lines
        ("pysandboxes.exception", 2, []),
        ("pysandboxes.exception", 2, [entry()] * 17),
        ("pysandboxes.exception", 2, [entry()[:-1]]),
        ("pysandboxes.exception", 2, [entry(module=1)]),
        ("pysandboxes.exception", 2, [entry(message="x" * 100_000)]),
        ("pysandboxes.exception", 2, [entry(code=1 << 100)]),
        ("pysandboxes.exception", 2, [entry(code=1.5)]),
        ("pysandboxes.exception", 2, [entry(frames=[("f", -1, "n", "")])]),
        ("pysandboxes.exception", 2, [entry(frames=[("f", 1 << 40, "n", "")])]),
        ("pysandboxes.exception", 2, [entry(frames=[("f", 1, "n", "")] * 1001)]),
        ("pysandboxes.exception", 2, [entry(frames=[["f", 1, "n", ""]])]),
        ("pysandboxes.exception", 2, [entry(frames=[("f", 1, "n")])]),  # no source line
        ("pysandboxes.exception", 2, [entry(frames=[("f", 1, "n", "x" * 10_000)])]),
        ("pysandboxes.exception", 2, [entry(cause=1)]),
        ("pysandboxes.exception", 2, [entry(cause=True)]),
        ("pysandboxes.exception", 2, [entry(denials="x")]),
        ("pysandboxes.exception", 2, [entry(base_only=1)]),
        ("pysandboxes.exception", 2, [entry(args="not bytes")]),
        ("pysandboxes.exception", 2, [entry(qualname="ExceptionGroup", members=[0], group_message="g")]),
        ("pysandboxes.exception", 2, [entry(members=[5])]),
    ],
)
def test_a_malformed_description_is_a_protocol_error(description):
    with pytest.raises(SandBoxProtocolError, match="malformed exception"):
        codec.decode_exception(pickle.dumps(description, 5))


def test_a_description_naming_a_gadget_is_a_protocol_error():
    for blob in (pickle.dumps(Gadget(os.system, "true"), 5), GADGETS["builtins.eval"]):
        with pytest.raises(SandBoxProtocolError) as caught:
            codec.decode_exception(blob)
        assert isinstance(caught.value.__cause__, RestrictedUnpicklingError)


def test_hostile_descriptions_never_run_code_or_loop():
    cases = [
        entry(module="os", qualname="system", args=pickle.dumps(("true",), 5)),  # not a class
        entry(module="subprocess", qualname="Popen", args=pickle.dumps((["true"],), 5)),  # not an exception
        entry(module="builtins", qualname="SystemExit", args=pickle.dumps((1,), 5)),  # BaseException only
        entry(module="builtins", qualname="ValueError", args=pickle.dumps(Gadget(os.system, "true"), 5)),
        entry(module="builtins", qualname="ValueError", args=pickle.dumps([1], 5)),  # args not a tuple
        entry(module="builtins", qualname="ValueError", state=pickle.dumps({"__class__": 1, "x": 2}, 5)),
        entry(module="builtins", qualname="print.__self__"),
        entry(module="sys", qualname="modules.os"),
        entry(module="builtins", qualname="<locals>"),
    ]
    for case in cases:
        copy = codec.decode_exception(pickle.dumps(("pysandboxes.exception", 2, [case]), 5))
        assert type(copy) in (ValueError, SandBoxRemoteError), case
    copy = codec.decode_exception(pickle.dumps(("pysandboxes.exception", 2, [cases[5]]), 5))
    assert type(copy) is ValueError and copy.x == 2  # type: ignore[attr-defined]


def test_a_cycle_of_causes_is_cut():
    description = ("pysandboxes.exception", 2, [entry(cause=1, context=0), entry(cause=0, context=1)])
    copy = codec.decode_exception(pickle.dumps(description, 5))
    assert copy.__cause__ is not None and copy.__cause__.__cause__ is None and copy.__context__ is None
    assert "".join(traceback.format_exception(copy))  # terminates
    assert sandbox_denials(copy) == []


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_to_decode_exception_give_only_a_protocol_error(blob):
    with contextlib.suppress(SandBoxProtocolError):
        codec.decode_exception(blob)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_descriptions_give_an_exception_or_a_protocol_error(data):
    blob = bytearray(codec.encode_exception(raise_in_child(ValueError("x", 1))))
    for _ in range(data.draw(st.integers(1, 3))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(SandBoxProtocolError):
        assert isinstance(codec.decode_exception(bytes(blob)), BaseException)


# -- the error classes ---------------------------------------------------------------------------


def test_restricted_unpickling_error_is_lazy_in_errors():
    import pysandboxes.errors as errors

    assert errors.RestrictedUnpicklingError is codec.RestrictedUnpicklingError
    assert issubclass(RestrictedUnpicklingError, pickle.UnpicklingError)
    assert sandbox_denials(RestrictedUnpicklingError("x.y is refused")) == [
        "RestrictedUnpicklingError: x.y is refused"
    ]
    with pytest.raises(AttributeError):
        errors.NoSuchName  # noqa: B018


def test_errors_does_not_import_pickle():
    import subprocess as sp

    code = "import sys, pysandboxes.errors; print('pickle' in sys.modules)"
    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_protocol_and_timeout_errors_are_not_denials():
    assert sandbox_denials(SandBoxProtocolError("x")) == []
    assert sandbox_denials(SandBoxTimeoutError("x")) == []
    assert isinstance(SandBoxTimeoutError("x"), TimeoutError)


def test_loads_result_accepts_a_memoryview():
    data, _ = codec.dumps({"a": [1]}, max_size=100)
    assert codec.loads_result(memoryview(data)) == {"a": [1]}
    assert codec.loads_result(bytearray(data)) == {"a": [1]}
    assert codec.loads_trusted(io.BytesIO(data).getbuffer()) == {"a": [1]}


def test_encode_exception_fits_max_size():
    big = raise_in_child(ValueError("x" * 1000, b"y" * 200_000))
    assert len(codec.encode_exception(big)) > 200_000
    blob = codec.encode_exception(big, max_size=100_000)  # without the args: rebuilt from the message
    assert len(blob) <= 100_000
    copy = codec.decode_exception(blob)
    assert type(copy) is ValueError and copy.args == (str(big)[: 64 * 1024] + "… [truncated]",)
    assert frames_shown(copy)[-1] == "sandboxed_function"
    blob = codec.encode_exception(big, max_size=2_000)  # the type and the start of the message
    assert len(blob) <= 2_000 and type(codec.decode_exception(blob)) is ValueError


def test_a_huge_exit_code_travels_as_text():
    copy = through_channel(raise_in_child(SystemExit(10**30)))
    assert type(copy) is SandBoxBaseExceptionError and copy.code == str(10**30)


def test_objects_mode_undoes_and_refuses_a_build_on_an_enum_member(app_module):
    import enum

    class Role(enum.Enum):
        USER = "user"
        ADMIN = "admin"

    Role.__module__ = "sandbox_app"
    Role.__qualname__ = "Role"
    app_module.Role = Role
    assert roundtrip([Role.ADMIN, Role.USER], mode="objects") == [Role.ADMIN, Role.USER]
    member = pickle.dumps(Role.ADMIN, 2)[:-1]  # REDUCE(Role, ("admin",)) → the shared member
    payload = member + pickle.dumps({"_value_": "user", "_name_": "USER"}, 2)[2:-1] + b"b."
    with pytest.raises(RestrictedUnpicklingError, match=re.escape("the host classes sandbox_app.")):
        codec.loads_result(payload, mode="objects")
    assert Role.ADMIN.value == "admin" and Role.ADMIN.name == "ADMIN"
    assert pickle.loads(payload) is Role.ADMIN and Role.ADMIN.value == "user"  # what it would do
    Role.ADMIN._value_, Role.ADMIN._name_ = "admin", "ADMIN"
