"""``python -m samples_shared.with_pages COMMAND...``: COMMAND run with the loopback page server
up, so that learning (``make learn``) fetches its one allowed page offline, as the tests do.

The command gets ``PAGE_HOST`` and ``PAGE_PORT`` (what the samples' ``net=`` rule for pages
reads), and each ``{url}`` of its arguments is replaced with the address of a redirect to the
article page (so following the redirect is learned too). Its exit status is returned.
"""

from __future__ import annotations

import os
import subprocess
import sys

from .testing import PageServer


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m samples_shared.with_pages COMMAND [ARG|{url}]...", file=sys.stderr)
        return 2
    with PageServer() as pages:
        command = [arg.replace("{url}", pages.url("/redirect")) for arg in argv]
        return subprocess.run(command, env={**os.environ, **pages.env()}, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
