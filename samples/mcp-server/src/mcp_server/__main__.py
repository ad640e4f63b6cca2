"""``python -m mcp_server [-t stdio|http] [-p PORT] [--learn FILE]``, or ``mcp-server-demo``.

Streamable HTTP listens on 127.0.0.1 only, at ``/mcp``. PORT defaults to ``MCP_PORT`` (else
8000): under python-sb the complete profile lets the server listen on ``${MCP_PORT:-8000}``
only. ``OS_SANDBOX=none`` (no sandbox child: the bodies run unconfined in the server) is the
negative control of the client configurations.
"""

from __future__ import annotations

import argparse
import os
import sys

from .server import COMPLETE_PROFILE, PROFILE, SANDBOX_SETTINGS, server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("-p", "--port", type=int, default=int(os.getenv("MCP_PORT") or 8000))
    parser.add_argument("--learn", metavar="FILE", help="partial mode: learn the bodies' rules into FILE")
    parser.add_argument(
        "--profile", choices=["partial", "complete"], help="print where a shipped profile is, and exit"
    )
    args = parser.parse_args(argv)
    if args.profile:
        print(PROFILE if args.profile == "partial" else COMPLETE_PROFILE)
        return 0
    if args.learn:
        SANDBOX_SETTINGS["learn"] = args.learn
    if args.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
