"""The chat turn every agent sample's suite runs, partial and complete (additive to
:mod:`samples_shared.testing`): the scripted model calls the three tools with the sane and the
refused arguments in one answer, then replies ``done``; :func:`assert_confined_turn` checks what
the model was told of each call and what the chat printed.
"""

from __future__ import annotations

from .testing import ESCAPE, SANE, PageServer, ScriptedChatServer, Step, reply, tool_calls

__all__ = ["DONE", "HINT", "assert_confined_turn", "confined_turn_script"]

#: the scripted model's final answer
DONE = "done"
#: the developer's hint ("Add `...` to the rule file to allow it."), never shown to the model
HINT = "to the rule file"


def confined_turn_script(pages: PageServer) -> list[Step]:
    """The sane expression, the allowed page (through a redirect), another loopback port, the
    eval escape and a document, in one answer; then :data:`DONE`."""
    return [
        tool_calls(
            ("evaluate_expression", {"expression": SANE}),
            ("fetch_webpage", {"url": pages.url("/redirect")}),
            ("fetch_webpage", {"url": pages.other_url()}),
            ("evaluate_expression", {"expression": ESCAPE}),
            ("read_document", {"name": "notes.txt"}),
        ),
        reply(DONE),
    ]


def assert_confined_turn(stdout: str, chat: ScriptedChatServer, *, prompt: str = "assistant> ") -> None:
    """The chat printed :data:`DONE`; the model was told 14, the page, the two refusals (each
    naming its rule, none with the hint) and the document, in the order it called them."""
    assert f"{prompt}{DONE}" in stdout, stdout
    told = chat.tool_messages()
    assert len(told) == 5, told
    sane, page, port, escape, document = told
    assert "14" in sane
    assert "# Sandboxed pages" in page
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert "Quarterly notes" in document
    assert HINT not in port + escape
