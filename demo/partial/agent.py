"""An agent that keeps its own rights and confines the tools it calls (partial mode).

Run it with plain `python demo/partial/agent.py`, from any directory: only the @sandbox
functions of tools.py run under a rule file, the `.py-sandboxes` next to this file (the
nearest one to the module that opens `sandboxes()`). A real agent would call the tools a
model chose; this one calls them in a fixed order, the last one as a misled model might.
"""

import os

import tools

from pysandboxes import SandBoxError, sandbox_denials, sandboxes

KEY = "~/.ssh/id_demo"  # `make demo` writes one into a temporary HOME


def first_line(path: str) -> str:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            return f.readline().strip()
    except FileNotFoundError:
        return "(no such file here, but nothing stopped the agent from looking)"


def main() -> None:
    print(f"agent (pid {os.getpid()}) reads {KEY} itself: {first_line(KEY)}")

    with sandboxes():  # starts the child, under demo/partial/.py-sandboxes
        report = tools.summarise("incident-2291.txt")
        print(f"\ntool summarise('incident-2291.txt') -> {report}")
        print("  (it ran in the child, pid", report["pid"], "- the data directory is exposed)")

        print("\ntool search('follow-up'), streamed item by item:")
        for item in tools.search("follow-up"):
            print(f"  {item}")

        print(f"\ntool read_file({KEY!r}), as a misled model might ask:")
        try:
            tools.read_file(KEY)
        except Exception as e:
            print(f"  raised in the child, seen by the agent as {type(e).__name__}:")
            print("  " + str(e).replace("\n", "\n  "))
            print(f"  sandbox_denials(e) -> {[denial.splitlines()[0] for denial in sandbox_denials(e)]}")
            kinds = {kind.__name__: isinstance(e, kind) for kind in (FileNotFoundError, SandBoxError)}
            print(f"  isinstance: {kinds}")

    print(f"\nafter the block the agent still reads {KEY}: {first_line(KEY)}")


if __name__ == "__main__":
    main()
