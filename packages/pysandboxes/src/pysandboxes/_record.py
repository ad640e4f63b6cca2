"""A small immutable record type.

``dataclasses`` costs about 15 ms of imports and a fraction of a millisecond per class on
this kind of machine; every program started by ``python-sb`` pays what the policy's modules
import, so records are built from ``__slots__`` instead.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds at start-up

if TYPE_CHECKING:
    from typing import Any, ClassVar, Self


class Record:
    """Fields are the ``__slots__`` of the class and its bases, in order.

    ``_defaults`` gives default values; ``_post_init`` may compute derived fields (set them
    with ``object.__setattr__``). Instances are immutable, compare and hash by value.
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Field order is the order of the annotations (slots may be sorted by tools).
        own = cls.__dict__.get("__slots__", ())
        if isinstance(own, str):
            own = (own,)
        annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (inspect is slow to import)
        annotated = [n for n in annotations if not n.startswith("_")]
        public = {n for n in own if not n.startswith("_")}
        if set(annotated) != public:
            raise TypeError(f"{cls.__name__}: __slots__ {sorted(public)} must match the annotated fields")
        cls._fields = (*cls._fields, *annotated)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} fields, got {len(args)}")
        setter = object.__setattr__
        for name, value in zip(fields, args, strict=False):
            setter(self, name, value)
        for name in fields[len(args) :]:
            if name in kwargs:
                setter(self, name, kwargs.pop(name))
            elif name in self._defaults:
                setter(self, name, self._defaults[name])
            else:
                raise TypeError(f"{type(self).__name__}: missing field '{name}'")
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown field(s) {sorted(kwargs)}")
        self._post_init()

    def _post_init(self) -> None:
        pass

    def _replace(self, **changes: Any) -> Self:
        values = {n: getattr(self, n) for n in self._fields}
        values.update(changes)
        return type(self)(**values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), *self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"
