"""``python -m samples_shared.with_servers COMMAND...``: COMMAND run with the loopback page server
and a scripted chat server up, so that learning (``make learn``) drives its scenario offline,
as the tests do.

The command gets ``PAGE_HOST``/``PAGE_PORT`` (what the samples' ``net=`` rule for pages reads)
and the chat server's variables (``CHAT_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``MODEL_HOST``/``MODEL_PORT``); each ``{url}`` of its arguments is replaced with the address of a
redirect to the article page (so following a redirect is learned too). The scripted model calls
the three tools once (a sane expression, that page, ``notes.txt``), then answers. The command's
exit status is returned.
"""

from __future__ import annotations

import os
import subprocess
import sys

from .testing import SANE, PageServer, ScriptedChatServer, reply, tool_calls


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m samples_shared.with_servers COMMAND [ARG|{url}]...", file=sys.stderr)
        return 2
    with PageServer() as pages, ScriptedChatServer() as chat:
        url = pages.url("/redirect")
        chat.script = [
            tool_calls(
                ("evaluate_expression", {"expression": SANE}),
                ("fetch_webpage", {"url": url}),
                ("read_document", {"name": "notes.txt"}),
            ),
            reply("The scenario ran."),
        ]
        command = [arg.replace("{url}", url) for arg in argv]
        env = {**os.environ, **pages.env(), **chat.env()}
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
