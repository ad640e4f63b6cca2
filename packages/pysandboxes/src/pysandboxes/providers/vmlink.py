"""One byte stream between the host and a virtual machine, carrying many channels.

The ``qemu`` provider has a single virtio-serial port between the host's launcher and the
guest's agent. Over it travel, multiplexed:

* channel 0, control: JSON messages (the guest is up, here is what to run, send this signal,
  the program ended with this status);
* byte streams: the program's standard input, output and error, and every stream socket handed
  over in a message (a connection the network broker opened, say);
* packet channels: a ``SOCK_SEQPACKET`` socket on one side reproduced on the other, message by
  message, with the descriptors its messages carry: a regular file or memfd travels as its
  content (a new memfd on the other side), a stream or packet socket becomes a new channel (a
  new socket pair on the other side). So partial mode's channel and the network broker's socket
  work across the machine boundary unchanged.

Each channel has a window (:data:`WINDOW` bytes in flight): the receiving side grants more as it
delivers, so a reader that does not read (a program ignoring its standard input) stops only its
own channel, never the others. Frames are ``channel (u32), operation (u8), length (u32)`` and
the payload. Both ends trust what they *send*; the host never trusts what it receives beyond
the sizes it accepts (:data:`MAX_FRAME`).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import queue
import socket
import stat
import struct
import threading

from ..remote.channel import _write_all as write_parts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

_FRAME = struct.Struct(">IBI")
DATA, EOF, MSG, CREDIT, CLOSE = range(5)
#: bytes a channel may have in flight before the other side has delivered them
WINDOW = 1 << 20
#: the largest frame accepted (a packet channel's message travels in one frame)
MAX_FRAME = (1 << 30) + 4096
#: channels open at once on a link (each is a socket and up to two threads)
MAX_CHANNELS = 512
#: what a packet message may carry (kinds of the descriptors after its body)
_FILE, _STREAM, _PACKET = range(3)
_ITEM = struct.Struct(">BI")
_CHUNK = 1 << 16
_CREDIT_BATCH = WINDOW // 4
_MAX_FDS = 64  # descriptors one packet message may carry


class LinkClosed(Exception):
    """The other end of the link is gone."""


class Link:
    """One end of the link over the connected file descriptor ``fd`` (a socket or a virtio
    port). ``first_id``: the first dynamic channel number this side allocates (the host uses
    odd numbers, the guest even ones). ``on_control`` receives each control message and the
    descriptors it carried; ``on_closed`` is called once when the link ends."""

    def __init__(
        self,
        fd: int,
        *,
        first_id: int,
        on_control: Callable[[dict[str, Any], list[int]], None],
        on_closed: Callable[[], None] | None = None,
    ) -> None:
        self.fd = fd
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._next_id = first_id
        self._channels: dict[int, _Endpoint] = {}
        self._on_control = on_control
        self._on_closed = on_closed
        self.closed = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._read_loop, name="pysandboxes-link", daemon=True).start()

    # -- writing --------------------------------------------------------------------------

    def send_frame(self, channel: int, op: int, payload: bytes | memoryview = b"") -> None:
        if self.closed.is_set():
            raise LinkClosed("the link is closed")
        data = _FRAME.pack(channel, op, len(payload))
        with self._write_lock:
            try:
                _write_all(self.fd, data)
                if payload:
                    _write_all(self.fd, payload)
            except OSError as exc:
                self._close()
                raise LinkClosed(f"the link is closed ({exc.strerror})") from None

    def send_control(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        """A control message, with descriptors (which stay open here: the caller closes them)."""
        payload, started = self._pack(json.dumps(message).encode(), list(fds))
        self.send_frame(0, MSG, payload)
        for endpoint in started:
            endpoint.start()

    def _pack(self, body: bytes, fds: list[int]) -> tuple[bytes, list[_Endpoint]]:
        """A packet message's payload, and the endpoints of the sockets it carries: the caller
        starts them once the message is sent (nothing of theirs may arrive before it)."""
        parts = [struct.pack(">II", len(body), len(fds)), body]
        endpoints: list[_Endpoint] = []
        for fd in fds:
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode):
                content = os.pread(fd, os.fstat(fd).st_size, 0)
                parts += [_ITEM.pack(_FILE, len(content)), content]
                continue
            kind = _STREAM
            if stat.S_ISSOCK(mode):
                probe = socket.socket(fileno=os.dup(fd))
                try:
                    if probe.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_SEQPACKET:
                        kind = _PACKET
                finally:
                    probe.close()
            endpoint = self._endpoint(os.dup(fd), self.new_id(), packet=kind == _PACKET)
            endpoints.append(endpoint)
            parts.append(_ITEM.pack(kind, endpoint.channel))
        return b"".join(parts), endpoints

    # -- channels -------------------------------------------------------------------------

    def new_id(self) -> int:
        with self._lock:
            channel = self._next_id
            self._next_id += 2
        return channel

    def attach(
        self,
        fd: int,
        *,
        channel: int | None = None,
        packet: bool = False,
        read: bool = True,
        write: bool = True,
        on_end: Callable[[], None] | None = None,
    ) -> int:
        """Carry ``fd`` (owned from now on) over a channel: what it reads is sent (``read``),
        what arrives is written to it (``write``). Returns the channel number."""
        endpoint = self._endpoint(
            fd,
            self.new_id() if channel is None else channel,
            packet=packet,
            read=read,
            write=write,
            on_end=on_end,
        )
        endpoint.start()
        return endpoint.channel

    def _endpoint(
        self,
        fd: int,
        channel: int,
        *,
        packet: bool,
        read: bool = True,
        write: bool = True,
        on_end: Callable[[], None] | None = None,
    ) -> _Endpoint:
        endpoint = _Endpoint(self, channel, fd, packet=packet, read=read, write=write, on_end=on_end)
        with self._lock:
            if len(self._channels) >= MAX_CHANNELS or channel in self._channels:
                endpoint._close_fd()
                raise LinkClosed(f"channel {channel}: too many channels, or one already open")
            self._channels[channel] = endpoint
        return endpoint

    def _forget(self, channel: int) -> None:
        with self._lock:
            self._channels.pop(channel, None)

    # -- reading --------------------------------------------------------------------------

    def _read_loop(self) -> None:
        try:
            while True:
                header = _read_exact(self.fd, _FRAME.size)
                channel, op, length = _FRAME.unpack(header)
                if length > MAX_FRAME:
                    raise LinkClosed(f"a frame of {length} bytes is larger than allowed")
                payload = _read_exact(self.fd, length) if length else b""
                self._dispatch(channel, op, payload)
        except Exception:  # whatever went wrong, the link ends (and says so)
            pass
        finally:
            self._close()

    def _dispatch(self, channel: int, op: int, payload: bytes) -> None:
        """One frame. The other side is not trusted: a frame that breaks the protocol (data past
        the window, a message on a byte stream, a malformed message, too many channels) ends
        the link (:class:`LinkClosed`)."""
        try:
            if channel == 0:
                if op == MSG:
                    body, fds = self._unpack(payload)
                    self._on_control(json.loads(body), fds)
                return
            with self._lock:
                endpoint = self._channels.get(channel)
            if endpoint is None:
                return  # a channel this side already closed: what was in flight is dropped
            if op == CREDIT:
                endpoint.credit(struct.unpack(">I", payload)[0])
            elif op in (DATA, MSG):
                if (
                    not endpoint.write  # a channel this side only sends on
                    or endpoint.queued >= WINDOW
                    or (op == DATA and len(payload) > _CHUNK)
                    or (op == MSG and not endpoint.packet)
                ):
                    raise LinkClosed(f"channel {channel}: the other side broke the protocol")
                with endpoint.cond:
                    endpoint.queued += len(payload)
                if op == DATA:
                    body, fds = payload, []
                else:
                    # unpacked here, in the reading thread: the channels it opens exist before
                    # any frame of theirs is read
                    body, fds = self._unpack(payload)
                if not endpoint.deliver_now(op, body, fds, len(payload)):
                    endpoint.enqueue(op, body, fds, len(payload))
            elif op == EOF:
                endpoint.inbox.put((EOF, b"", [], 0))
            elif op == CLOSE:
                endpoint.end(hard=False)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise LinkClosed(f"a malformed frame on channel {channel}: {exc}") from None

    def _unpack(self, payload: bytes) -> tuple[bytes, list[int]]:
        """The body of a packet message and new local descriptors for what it carried."""
        size, count = struct.unpack_from(">II", payload)
        offset = 8
        body = payload[offset : offset + size]
        offset += size
        fds: list[int] = []
        try:
            for _ in range(count):
                kind, value = _ITEM.unpack_from(payload, offset)
                offset += _ITEM.size
                if kind == _FILE:
                    fd = os.memfd_create("pysandboxes-carried", os.MFD_CLOEXEC)
                    fds.append(fd)
                    _write_all(fd, payload[offset : offset + value])
                    os.lseek(fd, 0, os.SEEK_SET)
                    offset += value
                    continue
                if kind not in (_STREAM, _PACKET):
                    raise ValueError(f"unknown item kind {kind}")
                kind_type = socket.SOCK_SEQPACKET if kind == _PACKET else socket.SOCK_STREAM
                mine, theirs = socket.socketpair(socket.AF_UNIX, kind_type)
                fds.append(theirs.detach())
                os.set_inheritable(fds[-1], False)
                self.attach(mine.detach(), channel=value, packet=kind == _PACKET)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return body, fds

    def _close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        with self._lock:
            endpoints = list(self._channels.values())
            self._channels.clear()
        for endpoint in endpoints:
            endpoint.end(hard=True)
        if self._on_closed is not None:
            self._on_closed()


class _Endpoint:
    """One local descriptor carried over a channel: a sender thread (local reads, limited by
    the window) and a delivery thread (writes what arrives, then grants the window back)."""

    def __init__(
        self,
        link: Link,
        channel: int,
        fd: int,
        *,
        packet: bool,
        read: bool,
        write: bool,
        on_end: Callable[[], None] | None,
    ) -> None:
        self.link = link
        self.channel = channel
        self.fd = fd
        self.packet = packet
        self.read = read
        self.write = write
        self.on_end = on_end
        self.window = WINDOW
        self.cond = threading.Condition()
        #: (operation, body, descriptors, size in the window), None: stop
        self.inbox: queue.SimpleQueue[tuple[int, bytes, list[int], int] | None] = queue.SimpleQueue()
        self.sock = socket.socket(fileno=fd) if stat.S_ISSOCK(os.fstat(fd).st_mode) else None
        self.pending = int(read) + int(write)  # directions still open
        self.queued = 0  # bytes received, not yet delivered (at most the window)
        self.backlog = 0  # frames waiting for the delivery thread
        self.uncredited = 0  # bytes delivered, not yet granted back to the sender
        self.ended = False

    def start(self) -> None:
        if self.read:
            threading.Thread(target=self._send_loop, name="pysandboxes-link-out", daemon=True).start()
        if self.write:
            threading.Thread(target=self._deliver_loop, name="pysandboxes-link-in", daemon=True).start()

    def credit(self, amount: int) -> None:
        with self.cond:
            self.window += amount
            self.cond.notify_all()

    def deliver_now(self, op: int, body: bytes, fds: list[int], size: int) -> bool:
        """Deliver in the reading thread when nothing waits before and the local socket takes
        it at once (the common case: one thread hop less each way); False: queue it."""
        if self.sock is None:
            return False
        with self.cond:
            if self.backlog or self.ended:
                return False
        try:
            if op == MSG:
                self._send_message(body, fds, socket.MSG_DONTWAIT)
            else:
                sent = self.sock.send(body, socket.MSG_DONTWAIT)
                if sent < len(body):  # the rest after what the socket took, in order
                    self.enqueue(DATA, body[sent:], [], size)
                    return True
        except OSError:  # full (or broken: the delivery thread meets the error and ends)
            return False
        self._delivered(size)
        return True

    def _send_message(self, body: bytes, fds: list[int], flags: int) -> None:
        """One packet message to the local socket, with its descriptors (closed here once sent;
        left open when the socket refuses it, for a later try)."""
        assert self.sock is not None
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
        self.sock.sendmsg([body], rights, flags)
        for fd in fds:
            os.close(fd)

    def enqueue(self, op: int, body: bytes, fds: list[int], size: int) -> None:
        with self.cond:
            self.backlog += 1
        self.inbox.put((op, body, fds, size))

    def _delivered(self, size: int) -> None:
        """``size`` bytes of frames delivered: grant them back, a quarter of the window at a
        time (a well-behaved sender waits only once a whole window is in flight)."""
        with self.cond:
            self.queued -= size
            self.uncredited += size
            if self.uncredited < _CREDIT_BATCH:
                return
            amount, self.uncredited = self.uncredited, 0
        with contextlib.suppress(LinkClosed):
            self.link.send_frame(self.channel, CREDIT, struct.pack(">I", amount))

    def end(self, *, hard: bool) -> None:
        """The other side closed the channel (what it sent before is still delivered), or the
        link is gone (``hard``: both directions stop now)."""
        with self.cond:
            if self.ended:
                return
            self.ended = True
            self.cond.notify_all()
        self.inbox.put(None)
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR if hard else socket.SHUT_RD)

    def _direction_done(self) -> None:
        with self.cond:
            self.pending -= 1
            last = self.pending <= 0
        if last:
            self.link._forget(self.channel)
            with contextlib.suppress(LinkClosed):
                self.link.send_frame(self.channel, CLOSE)
            self._close_fd()
            if self.on_end is not None:
                self.on_end()

    def _close_fd(self) -> None:
        with contextlib.suppress(OSError):
            if self.sock is not None:
                self.sock.close()
            else:
                os.close(self.fd)

    def _send_loop(self) -> None:
        try:
            while True:
                with self.cond:
                    while self.window <= 0 and not self.ended:
                        self.cond.wait()
                    if self.ended:
                        return
                if self.packet:
                    assert self.sock is not None
                    # the message's size first: recvmsg(n) allocates n bytes at every call
                    size = self.sock.recvmsg_into([bytearray(0)], 0, socket.MSG_PEEK | socket.MSG_TRUNC)[0]
                    data, ancillary, _flags, _addr = self.sock.recvmsg(
                        max(size, 1), socket.CMSG_SPACE(4 * _MAX_FDS)
                    )
                    fds = received_fds(ancillary)
                    if not data and not fds:
                        break
                    try:
                        payload, started = self.link._pack(data, fds)
                    finally:
                        for fd in fds:
                            os.close(fd)
                    op = MSG
                else:
                    payload = self.sock.recv(_CHUNK) if self.sock is not None else os.read(self.fd, _CHUNK)
                    if not payload:
                        break
                    op, started = DATA, []
                with self.cond:
                    self.window -= len(payload)
                self.link.send_frame(self.channel, op, payload)
                for endpoint in started:
                    endpoint.start()
            self.link.send_frame(self.channel, EOF)
        except (OSError, LinkClosed):
            pass
        finally:
            self._direction_done()

    def _deliver_loop(self) -> None:
        try:
            while True:
                item = self.inbox.get()
                if item is None:
                    break
                op, payload, fds, size = item
                if op == EOF:
                    break
                if op == MSG:
                    try:
                        self._send_message(payload, fds, 0)
                    except OSError:
                        for fd in fds:
                            os.close(fd)
                        raise
                elif self.sock is not None:
                    self.sock.sendall(payload)
                else:
                    _write_all(self.fd, payload)
                with self.cond:
                    self.backlog -= 1
                self._delivered(size)
        except OSError:
            pass
        finally:
            # the other side sends nothing more: the local reader sees the end of its input
            if self.sock is not None:
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_WR)
            elif not self.read:
                with contextlib.suppress(OSError):
                    os.close(self.fd)
                self.fd = -1
            self._direction_done()


def received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors of ``recvmsg``'s ancillary data (``SCM_RIGHTS``)."""
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds.extend(array.array("i", data[:usable]))
    return fds


def _write_all(fd: int, data: bytes | memoryview) -> None:
    write_parts(fd, [data])


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise LinkClosed("end of the link")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
