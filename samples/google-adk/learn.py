"""The learning scenario: one turn of the ADK runner, in which the scripted model calls the
three tools (ADK's own dispatch: FunctionTool.run_async under the runner, with its plugin).

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import asyncio
import sys

from google_adk_demo.agent import APP, build_runner
from google_adk_demo.chat import USER, turn
from google_adk_demo.tools import PROFILE

from pysandboxes import is_in_sandbox, sandboxes


async def drive(url: str, **sandbox: object) -> None:
    # the scripted model (samples_shared.with_servers) calls the three tools, the page at url
    runner = build_runner(**sandbox)
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    try:
        print("agent:", await turn(runner, session.id, f"Run the scenario ({url})."))
    finally:
        await runner.close()


async def main(url: str) -> None:
    if is_in_sandbox():
        await drive(url)
        return
    learning = {"learn": f"{PROFILE}.learn"}
    async with sandboxes(sandboxes_config=str(PROFILE), **learning):
        await drive(url, **learning)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
