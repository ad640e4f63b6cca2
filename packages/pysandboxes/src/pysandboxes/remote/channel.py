"""The partial-mode channel: one message per frame over an inherited socket pair.

``SOCK_SEQPACKET`` keeps message boundaries, so several threads of the child can wait on the
same socket and each receives whole frames: no dispatcher thread, no HTTP, no TCP port, no
token (the socket exists only in the two processes). A frame is a small header, the pickle,
and its out-of-band buffers (pickle protocol 5). Frames larger than :data:`INLINE_MAX` travel
in an anonymous memory file whose descriptor rides along (``SCM_RIGHTS``): no size cap but
the ``remote-max-payload`` rule, and no copy through the socket buffers.
"""

from __future__ import annotations

import array
import os
import socket
import struct

from ..errors import SandBoxError, SandBoxProtocolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

#: frames up to this size are sent in the message itself
INLINE_MAX = 128 * 1024
_HEADER = struct.Struct("<QBBHQ")  # call id, kind, flags, buffer count, payload length
_LENGTH = struct.Struct("<Q")
_FLAG_MEMFD = 1

# frame kinds, host -> child
CALL = 1
CANCEL = 2
CLOSE = 3  # a generator closed early by the caller
SHUTDOWN = 4
# frame kinds, child -> host
READY = 10
RESULT = 11
ERROR = 12
ITEM = 13
END = 14
FAILED = 15  # the child could not start: the payload is a UTF-8 message
LOG = 16  # a record of the child's sandbox loggers: JSON [logger name, level, message]


class ChannelClosed(SandBoxError):
    """The other side is gone (end of file on the socket)."""


class Frame:
    __slots__ = ("buffers", "call_id", "kind", "payload")

    def __init__(
        self, call_id: int, kind: int, payload: bytes | memoryview, buffers: list[memoryview]
    ) -> None:
        self.call_id = call_id
        self.kind = kind
        self.payload = payload
        self.buffers = buffers


class Channel:
    """Both ends use this class; ``send`` and ``recv`` may be called from many threads."""

    def __init__(self, sock: socket.socket, max_size: int = 1 << 30) -> None:
        import threading

        self.sock = sock
        # recvmsg(n) allocates n bytes at every call (an mmap for 128 KiB): each thread
        # receives into a buffer of its own instead, and copies out what arrived.
        self._buffers = threading.local()
        #: the largest frame accepted (``remote-max-payload``): the child is not trusted
        self.max_size = max_size

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(
        self,
        call_id: int,
        kind: int,
        payload: bytes | memoryview = b"",
        buffers: Sequence[bytes | memoryview | bytearray] = (),
    ) -> None:
        views = [memoryview(b).cast("B") for b in buffers]
        lengths = b"".join(_LENGTH.pack(v.nbytes) for v in views)
        size = len(payload) + sum(v.nbytes for v in views)
        if size + len(lengths) + _HEADER.size <= INLINE_MAX:
            header = _HEADER.pack(call_id, kind, 0, len(views), len(payload))
            self._sendmsg([header, lengths, payload, *views], [])
            return
        fd = os.memfd_create("pysandboxes-frame", os.MFD_CLOEXEC)
        try:
            _write_all(fd, [payload, *views])
            header = _HEADER.pack(call_id, kind, _FLAG_MEMFD, len(views), len(payload))
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]).tobytes())]
            self._sendmsg([header, lengths], rights)
        finally:
            os.close(fd)

    def _sendmsg(self, parts: list[bytes | memoryview], ancillary: list[tuple[int, int, bytes]]) -> None:
        try:
            self.sock.sendmsg(parts, ancillary)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            if isinstance(exc, (BrokenPipeError, ConnectionResetError)) or exc.errno in (32, 104, 9):
                raise ChannelClosed("the other end of the sandbox channel is gone") from None
            raise

    def recv(self, spin: float = 0.0) -> Frame:
        """The next frame. ``spin``: poll for that many seconds before sleeping in the kernel
        (an answer usually comes within tens of microseconds, and waking a sleeping thread on
        another CPU costs as much again)."""
        if spin:
            import time

            end = time.perf_counter() + spin
            while True:
                frame = self._recv(socket.MSG_DONTWAIT)
                if frame is not None or time.perf_counter() > end:
                    break
            if frame is not None:
                return frame
        frame = self._recv(0)
        assert frame is not None
        return frame

    def _recv(self, flags: int) -> Frame | None:
        buffer = getattr(self._buffers, "buffer", None)
        if buffer is None:
            buffer = self._buffers.buffer = bytearray(INLINE_MAX)
        try:
            size, ancillary, _flags, _addr = self.sock.recvmsg_into([buffer], socket.CMSG_SPACE(4), flags)
        except BlockingIOError:
            return None
        except (ConnectionResetError, OSError) as exc:
            if isinstance(exc, ConnectionResetError) or exc.errno in (104, 9):
                raise ChannelClosed("the other end of the sandbox channel is gone") from None
            raise
        if not size:
            raise ChannelClosed("the other end of the sandbox channel is gone")
        data = bytes(memoryview(buffer)[:size])
        try:
            call_id, kind, flags, count, length = _HEADER.unpack_from(data)
            offset = _HEADER.size
            sizes = [_LENGTH.unpack_from(data, offset + 8 * i)[0] for i in range(count)]
        except struct.error:
            _close_received(ancillary)
            raise SandBoxProtocolError("the sandbox sent a malformed frame") from None
        offset += 8 * count
        total = length + sum(sizes)
        if flags & _FLAG_MEMFD:
            fd = _received_fd(ancillary)
            try:
                if total > self.max_size:
                    raise SandBoxProtocolError(
                        f"the sandbox sent {total} bytes, more than remote-max-payload={self.max_size}"
                    )
                body = memoryview(_read_all(fd, total))
            except OSError as exc:
                raise SandBoxProtocolError(f"the sandbox sent an unreadable memory file: {exc}") from None
            finally:
                os.close(fd)
            start = 0
        else:
            _close_received(ancillary)
            if offset + total != len(data):
                raise SandBoxProtocolError("the sandbox sent a frame whose sizes do not add up")
            body = memoryview(data)
            start = offset
        payload = body[start : start + length]
        start += length
        buffers: list[memoryview] = []
        for size in sizes:
            buffers.append(body[start : start + size])
            start += size
        return Frame(call_id, kind, payload, buffers)

    def close(self) -> None:
        self.sock.close()


def _close_received(ancillary: list[tuple[int, int, bytes]]) -> None:
    """Descriptors nobody asked for are closed (a hostile peer could send many)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % 4])
            for fd in fds:
                os.close(fd)


def _received_fd(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(data) >= 4:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % 4])
            for extra in fds[1:]:
                os.close(extra)
            return fds[0]
    raise SandBoxProtocolError("a large frame arrived without its memory file")


def _write_all(fd: int, parts: Sequence[bytes | memoryview]) -> None:
    for part in parts:
        view = memoryview(part).cast("B")
        while view.nbytes:
            written = os.write(fd, view)
            view = view[written:]


def _read_all(fd: int, size: int) -> bytearray:
    out = bytearray(size)
    view = memoryview(out)
    done = 0
    while done < size:
        n = os.preadv(fd, [view[done:]], done)
        if n <= 0:
            raise SandBoxProtocolError("a large frame's memory file is shorter than announced")
        done += n
    return out
