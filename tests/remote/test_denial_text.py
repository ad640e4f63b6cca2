"""``denial_text``: what an agent's model is told of a refusal made in the sandboxed child."""

from __future__ import annotations

from .conftest import Project


def test_a_tool_refusal_reaches_the_model_without_the_hint_and_the_developer_with_it(
    project: Project, provider: str
) -> None:
    project.rules(provider)
    project.tools(
        """
        from pysandboxes import sandbox

        @sandbox
        def read(path):
            with open(path) as f:
                return f.read()
        """
    )
    project.host(
        """
        import logging, os, sys
        from pysandboxes import denial_text, sandboxes
        from tools import read

        logging.basicConfig(stream=sys.stdout, format="LOG %(name)s %(levelname)s %(message)s")
        secret = os.path.join(os.environ["HOME"], "home-secret.txt")
        with sandboxes():
            try:
                read(secret)
            except FileNotFoundError as exc:
                print("MODEL", denial_text(exc))
        """
    )
    (project.root / "home-secret.txt").write_text("s3cret")
    lines = project.ok()
    model = [line for line in lines if line.startswith("MODEL")]
    assert model == [
        f"MODEL RuleFileNotFoundError: Access to '{project.root}/home-secret.txt' must be accepted by a rule."
    ]
    log = "\n".join(line for line in lines if not line.startswith("MODEL"))
    assert log.startswith("LOG Pysandboxes WARNING refused: RuleFileNotFoundError")
    assert f"Add `expose-ro={project.root}` to the rule file to allow it." in log
