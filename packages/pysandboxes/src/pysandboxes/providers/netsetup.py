"""Network set-up inside a fresh network namespace, shared by the network broker's forwarder
and the ``unshare`` provider (which runs it while it still holds ``CAP_NET_ADMIN``).

Small on purpose: the ``unshare`` provider imports it on every start.
"""

from __future__ import annotations

import os
import struct

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def _loopback_up() -> None:
    """Bring ``lo`` up (``unshare --net`` leaves it down; bwrap brings it up itself)."""
    import _socket
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))
    finally:
        s.close()


def _local_default_route(family: int) -> None:
    """``ip route add local default dev lo table local``: every address is local (netlink)."""
    import socket

    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    try:
        nl.bind((0, 0))
        # rtmsg: family, dst_len, src_len, tos, table=LOCAL, protocol=STATIC, scope=HOST, type=LOCAL
        body = struct.pack("=BBBBBBBBI", family, 0, 0, 0, 255, 4, 254, 2, 0)
        body += struct.pack("=HHI", 8, 4, socket.if_nametoindex("lo"))  # RTA_OIF
        flags = 0x1 | 0x4 | 0x400  # NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE
        nl.send(struct.pack("=IHHII", 16 + len(body), 24, flags, 1, 0) + body)  # RTM_NEWROUTE
        reply = nl.recv(4096)
        kind = struct.unpack_from("=H", reply, 4)[0]
        error = -struct.unpack_from("=i", reply, 16)[0] if kind == 2 else 0  # NLMSG_ERROR
        if error and error != 17:  # EEXIST: already there
            raise OSError(error, os.strerror(error))
    finally:
        nl.close()
