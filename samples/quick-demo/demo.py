"""quick-demo: a plain program (no framework, no model) that python-sb confines.

    python-sb demo.py [URL]                # the job: fetch a page, list data/, read DEMO_API_KEY
    python-sb demo.py --evil [OTHER_PORT]  # the same program trying what its rules do not allow

python-sb uses the `.py-sandboxes` next to this file. Each attempt of --evil prints the refusal
as it was raised; under plain `python demo.py --evil` every one of them succeeds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from samples_shared.tools import fetch_webpage

from pysandboxes import sandbox_denials

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
#: the page the job fetches; the rule file's net= line allows its host
DEFAULT_URL = "https://docs.python.org/3/"


def job(url: str) -> None:
    page = fetch_webpage(url)
    print(f"fetched {url}: {len(page)} characters, starting {page.splitlines()[0]!r}")
    print(f"data/ holds: {', '.join(sorted(os.listdir(DATA)))}")
    key = os.getenv("DEMO_API_KEY")
    print(f"DEMO_API_KEY: {'set, ' + str(len(key)) + ' characters' if key else 'not set'}")


def attempt(what: str, action: Callable[[], object]) -> None:
    print(f"- {what}")
    try:
        result = action()
    except Exception as e:
        # sandbox_denials: the refusals behind the exception (httpx wraps the socket's, for one)
        verdict = "refused by the sandbox" if sandbox_denials(e) else "failed"
        print(f"  {verdict}: {type(e).__name__}: {e}".replace("\n", "\n  "))
    else:
        print(f"  it worked: {result!r}")


def evil(other_port: int) -> None:
    attempt("list ~/.ssh", lambda: os.listdir(os.path.expanduser("~/.ssh")))
    attempt("run a shell: os.system('id')", lambda: os.system("id"))
    attempt(
        f"send data to another port: 127.0.0.1:{other_port}",
        lambda: fetch_webpage(f"http://127.0.0.1:{other_port}/"),
    )
    secret = os.getenv("DEMO_SECRET")
    print("- read a secret of the environment: os.getenv('DEMO_SECRET')")
    if secret is None:
        print("  not there: DEMO_SECRET is not in the program's environment (no env= rule forwards it)")
    else:
        print(f"  it worked: {secret!r}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--evil"]:
        evil(int(argv[1]) if len(argv) > 1 else 9)
    else:
        job(argv[0] if argv else DEFAULT_URL)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
