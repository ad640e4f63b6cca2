"""The qemu provider's link: channels multiplexed over one byte stream (no VM needed)."""

from __future__ import annotations

import array
import contextlib
import os
import socket
import threading

from pysandboxes.providers.vmlink import WINDOW, Link


def _pair() -> tuple[Link, Link, list, list]:
    a, b = socket.socketpair()
    got_a: list = []
    got_b: list = []
    left = Link(a.detach(), first_id=1001, on_control=lambda m, fds: got_a.append((m, fds)))
    right = Link(b.detach(), first_id=1000, on_control=lambda m, fds: got_b.append((m, fds)))
    left.start()
    right.start()
    return left, right, got_a, got_b


def _wait(predicate, timeout: float = 10.0) -> None:
    import time

    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_stream_channel_carries_bytes_and_end_of_file() -> None:
    left, right, _, _ = _pair()
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    left.attach(src_r, channel=1, write=False)
    right.attach(dst_w, channel=1, read=False)
    data = os.urandom(3 * WINDOW + 17)  # more than the window: credits must flow back
    writer = threading.Thread(target=lambda: (os.write(src_w, data) and None, os.close(src_w)))
    writer.start()
    received = b""
    while chunk := os.read(dst_r, 1 << 16):
        received += chunk
    writer.join()
    assert received == data


def test_control_message_carries_a_file_and_a_packet_socket() -> None:
    left, _right, _, got_b = _pair()
    memfd = os.memfd_create("t", 0)
    os.write(memfd, b"settings")
    near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    left.send_control({"hello": 1}, [memfd, far.fileno()])
    far.close()
    os.close(memfd)
    _wait(lambda: got_b)
    message, fds = got_b[0]
    assert message == {"hello": 1}
    assert os.pread(fds[0], 100, 0) == b"settings"
    remote = socket.socket(fileno=fds[1])
    assert remote.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_SEQPACKET
    # message boundaries survive, and a descriptor inside a message crosses too
    near.send(b"one")
    near.send(b"two")
    assert remote.recv(100) == b"one"
    assert remote.recv(100) == b"two"
    inner_a, inner_b = socket.socketpair()
    remote.sendmsg(
        [b"fd"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [inner_b.fileno()]).tobytes())]
    )
    inner_b.close()
    data, anc, _f, _a = near.recvmsg(100, socket.CMSG_SPACE(4))
    assert data == b"fd"
    carried = socket.socket(fileno=array.array("i", anc[0][2])[0])
    carried.sendall(b"ping")
    assert inner_a.recv(10) == b"ping"
    inner_a.sendall(b"pong")
    assert carried.recv(10) == b"pong"
    inner_a.close()
    assert carried.recv(10) == b""  # end of file crosses
    near.close()
    assert remote.recv(10) == b""
    remote.close()
    carried.close()
    os.close(fds[0])


def test_a_stalled_channel_does_not_stop_the_others() -> None:
    left, right, _, got_b = _pair()
    src_r, src_w = os.pipe()
    _dst_r, dst_w = os.pipe()
    os.set_blocking(src_w, False)
    left.attach(src_r, channel=1, write=False)
    right.attach(dst_w, channel=1, read=False)  # nobody reads dst_r
    try:
        while True:
            os.write(src_w, b"x" * 65536)
    except BlockingIOError:
        pass
    left.send_control({"still": "alive"})
    _wait(lambda: got_b)
    assert got_b[0][0] == {"still": "alive"}


def test_link_end_is_reported() -> None:
    a, b = socket.socketpair()
    closed = threading.Event()
    link = Link(a.detach(), first_id=1, on_control=lambda m, f: None, on_closed=closed.set)
    link.start()
    b.close()
    assert closed.wait(5)


def _raw_peer() -> tuple[Link, socket.socket, threading.Event]:
    """A link whose other end is a raw socket: the test writes frames by hand (a hostile guest)."""
    a, b = socket.socketpair()
    closed = threading.Event()
    link = Link(a.detach(), first_id=1001, on_control=lambda m, f: None, on_closed=closed.set)
    link.start()
    return link, b, closed


def _frame(channel: int, op: int, payload: bytes = b"") -> bytes:
    import struct

    return struct.pack(">IBI", channel, op, len(payload)) + payload


def test_data_past_the_window_ends_the_link() -> None:
    from pysandboxes.providers.vmlink import DATA

    link, raw, closed = _raw_peer()
    _read, write = os.pipe()  # nobody reads: nothing is delivered, nothing is credited back
    link.attach(write, channel=1, read=False)
    # a full window in flight, plus the one chunk the pipe took (and was credited for)
    for _ in range(WINDOW // 65536 + 1):
        raw.sendall(_frame(1, DATA, b"x" * 65536))
    assert not closed.wait(0.5)
    raw.sendall(_frame(1, DATA, b"x"))  # the window is full: a well-behaved peer waits
    assert closed.wait(5)
    raw.close()


def test_a_message_on_a_byte_stream_ends_the_link() -> None:
    from pysandboxes.providers.vmlink import MSG

    link, raw, closed = _raw_peer()
    _read, write = os.pipe()
    link.attach(write, channel=1, read=False)
    raw.sendall(_frame(1, MSG, b"\0\0\0\0\0\0\0\0"))
    assert closed.wait(5)
    raw.close()


def test_a_malformed_control_message_ends_the_link() -> None:
    from pysandboxes.providers.vmlink import MSG

    _link, raw, closed = _raw_peer()
    raw.sendall(_frame(0, MSG, b"\0\0\0\x05\0\0\0\0{nope"))
    assert closed.wait(5)
    raw.close()


def test_too_many_channels_end_the_link() -> None:
    import struct

    from pysandboxes.providers.vmlink import MAX_CHANNELS, MSG

    _link, raw, closed = _raw_peer()
    body = b"{}"
    items = b"".join(struct.pack(">BI", 1, 2 * n) for n in range(MAX_CHANNELS + 1))
    raw.sendall(_frame(0, MSG, struct.pack(">II", len(body), MAX_CHANNELS + 1) + body + items))
    assert closed.wait(10)
    raw.close()


def test_data_on_a_send_only_channel_ends_the_link() -> None:
    from pysandboxes.providers.vmlink import DATA

    link, raw, closed = _raw_peer()
    local, other = socket.socketpair()
    link.attach(local.detach(), channel=1, write=False)  # like the host's standard input
    raw.sendall(_frame(1, DATA, b"injected"))
    assert closed.wait(5)
    other.setblocking(False)
    with contextlib.suppress(BlockingIOError):  # nothing was written to it
        assert other.recv(100) == b""
    other.close()
    raw.close()
