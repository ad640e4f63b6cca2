#!/usr/bin/env python3
"""Pre-execution hook for coding agents: refuse a shell command that runs Python without python-sb.

The agent (Claude Code, Codex, Gemini CLI, Cursor, Copilot CLI) hands the tool call it is
about to run as JSON on standard input. This script finds the shell command in it, splits the
command the way a POSIX shell would (quotes, ``&&``, ``||``, ``;``, ``|``, ``&``, newlines,
``$(...)``, backticks, ``sh -c "..."``, here-documents fed to a shell), and looks at the program
of every simple command, past the launchers that only run another program (``env``, ``sudo``,
``nohup``, ``timeout N``, ``uv run``, ``uvx``, ``VAR=value`` prefixes, ...). It refuses:

- a bare interpreter: ``python``, ``python3``, ``python3.12``, ``pypy3``, or a path to one,
  and ``uv run script.py`` / ``uv run -m module`` (uv starts the interpreter itself);
- ``python-sb`` told to stop confining: ``--learn`` (learning records instead of refusing),
  ``--py-sandbox=false``, ``--os-sandbox=none``, or ``--pysandboxes-config`` naming a file
  outside the project.

Everything else passes. A command the parser cannot split (an unterminated quote, an unclosed
``$(``) is refused when it mentions python, and allowed otherwise: the shell would reject the
same text, so nothing runs; but a command built to confuse a parser is how one would hide a
``python`` from it, so when python is named the doubt goes against the command.

This is a habit guard, not a barrier: see ``coding-agents/README.md`` for what it cannot see
(shebang scripts, Makefiles, aliases, console scripts such as ``pytest``).

Standard library only, no I/O besides stdin/stdout/stderr: it runs before every shell command.
Usage: ``require_python_sb.py [--agent claude|codex|gemini|cursor|copilot]`` (the manifests
name the agent; without it the payload's shape decides).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

AGENTS = ("claude", "codex", "gemini", "cursor", "copilot")

# -- verdicts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""

    @staticmethod
    def allow() -> Verdict:
        return Verdict(True)


class Unparsable(Exception):
    """The command is not valid shell as far as this parser can tell."""


# -- the shell lexer ---------------------------------------------------------------------------

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTIONS = re.compile(r"&>>|&>|>>|>&|<&|<>|>\||<<<|<<-|<<|>|<")
_MAX_DEPTH = 8  # sh -c "sh -c '...'": deeper than this is refused as unparsable


@dataclass
class Command:
    """One simple command: its words (quotes removed), and any here-document body fed to it."""

    words: list[str] = field(default_factory=list)
    stdin_text: list[str] = field(default_factory=list)


@dataclass
class Parsed:
    commands: list[Command]
    substitutions: list[str]  # the text of every $(...), `...` and <(...) met on the way


def _matching_paren(text: str, start: int) -> int:
    """Index just past the ``)`` closing the ``(`` before ``start``, quotes and nesting honoured."""
    depth = 1
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unparsable("unterminated single quote")
            i = end + 1
            continue
        if c == '"':
            i = _skip_double_quoted(text, i + 1)
            continue
        if c == "`":
            end = _closing_backtick(text, i + 1)
            i = end + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unparsable("unclosed $( or (")


def _closing_backtick(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    raise Unparsable("unclosed backtick")


def _skip_double_quoted(text: str, start: int) -> int:
    """Index just past the closing ``"`` of a string opened before ``start``."""
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "$" and text.startswith("$(", i):
            i = _matching_paren(text, i + 2)
            continue
        if c == "`":
            i = _closing_backtick(text, i + 1) + 1
            continue
        i += 1
    raise Unparsable("unterminated double quote")


def tokenize(text: str) -> tuple[list[tuple[str, str]], list[str], dict[int, list[str]]]:
    """Split shell text into ``("word", w)`` and ``("op", o)`` tokens.

    Returns the tokens, the text of each command substitution (to be parsed in turn), and the
    here-document bodies keyed by the index of the token that introduced them.
    """
    tokens: list[tuple[str, str]] = []
    substitutions: list[str] = []
    heredocs: dict[int, list[str]] = {}
    pending: list[tuple[int, str, bool]] = []  # (token index, delimiter, strip tabs)
    i = 0
    n = len(text)
    word: list[str] = []
    in_word = False

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            tokens.append(("word", "".join(word)))
            word.clear()
            in_word = False

    while i < n:
        c = text[i]
        if c in " \t":
            end_word()
            i += 1
            continue
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":  # line continuation
                i += 2
                continue
            if i + 1 < n:
                word.append(text[i + 1])
            in_word = True
            i += 2
            continue
        if c == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unparsable("unterminated single quote")
            word.append(text[i + 1 : end])
            in_word = True
            i = end + 1
            continue
        if c == '"':
            end = _skip_double_quoted(text, i + 1)
            inner = text[i + 1 : end - 1]
            substitutions.extend(_substitutions_in(inner))
            word.append(_unescape_double(inner))
            in_word = True
            i = end
            continue
        if c == "`":
            end = _closing_backtick(text, i + 1)
            substitutions.append(text[i + 1 : end].replace("\\`", "`"))
            word.append("`…`")
            in_word = True
            i = end + 1
            continue
        if c == "$" and text.startswith("$((", i):  # arithmetic: no command inside
            end = _matching_paren(text, i + 2)
            word.append(text[i:end])
            in_word = True
            i = end
            continue
        if c in "$<>" and text.startswith("(", i + 1):  # $(...), <(...), >(...)
            end = _matching_paren(text, i + 2)
            substitutions.append(text[i + 2 : end - 1])
            word.append("$(…)")
            in_word = True
            i = end
            continue
        if c in "<>" or (c == "&" and text.startswith(">", i + 1)):
            if in_word and "".join(word).isdigit():  # 2>file: the digits are the descriptor
                word.clear()
                in_word = False
            else:
                end_word()
            match = _REDIRECTIONS.match(text, i)
            assert match is not None
            op = match.group(0)
            tokens.append(("redir", op))
            i = match.end()
            if op in ("<<", "<<-"):
                while i < n and text[i] in " \t":
                    i += 1
                m = re.match(r"""(['"]?)([^\s;&|<>()'"]+)\1""", text[i:])
                if not m:
                    raise Unparsable("here-document without a delimiter")
                tokens.append(("word", m.group(2)))
                pending.append((len(tokens) - 1, m.group(2), op == "<<-"))
                i += m.end()
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            end_word()
            tokens.append(("op", op))
            i += len(op)
            if op == "\n" and pending:
                for index, delimiter, strip in pending:
                    body: list[str] = []
                    while i < n:
                        end = text.find("\n", i)
                        line = text[i:] if end < 0 else text[i:end]
                        i = n if end < 0 else end + 1
                        if (line.lstrip("\t") if strip else line) == delimiter:
                            break
                        body.append(line)
                    heredocs[index] = body
                pending.clear()
            continue
        word.append(c)
        in_word = True
        i += 1
    end_word()
    for index, _delimiter, _strip in pending:  # the text ends before the body: an empty body
        heredocs[index] = []
    return tokens, substitutions, heredocs


def _substitutions_in(inner: str) -> list[str]:
    """The ``$(...)`` and backtick bodies inside a double-quoted string."""
    found: list[str] = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\":
            i += 2
            continue
        if inner.startswith("$((", i):
            i = _matching_paren(inner, i + 2)
            continue
        if inner.startswith("$(", i):
            end = _matching_paren(inner, i + 2)
            found.append(inner[i + 2 : end - 1])
            i = end
            continue
        if c == "`":
            end = _closing_backtick(inner, i + 1)
            found.append(inner[i + 1 : end])
            i = end + 1
            continue
        i += 1
    return found


def _unescape_double(inner: str) -> str:
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), inner)


def parse(text: str) -> Parsed:
    """The simple commands of a shell text, and the command substitutions found in it."""
    tokens, substitutions, heredocs = tokenize(text)
    commands: list[Command] = []
    current = Command()
    skip_next_word = False
    for index, (kind, value) in enumerate(tokens):
        if kind == "op":
            if current.words or current.stdin_text:
                commands.append(current)
            current = Command()
            continue
        if kind == "redir":
            skip_next_word = True
            if value == "<<<":
                current.stdin_text.append("")  # filled with the next word below
            continue
        if skip_next_word:
            skip_next_word = False
            if index in heredocs:
                current.stdin_text.append("\n".join(heredocs[index]))
            elif current.stdin_text and current.stdin_text[-1] == "":
                current.stdin_text[-1] = value  # a here-string
            continue
        current.words.append(value)
    if current.words or current.stdin_text:
        commands.append(current)
    return Parsed(commands, substitutions)


# -- what a command runs ---------------------------------------------------------------------

_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[tmdw]?(-dbg|-config)?$")
_SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox-sh"))
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
# Words that start a command without being its program.
_PREFIX_WORDS = frozenset(("!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "time"))
# Programs that run the rest of their arguments as a command, each with the options that take
# a value (so that ``timeout -s KILL 5 python`` finds python, not ``KILL``).
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset(("-u", "--unset", "-C", "--chdir", "-S", "--split-string")),
    "sudo": frozenset(("-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-C", "-D")),
    "doas": frozenset(("-u", "-C")),
    "nohup": frozenset(),
    "nice": frozenset(("-n", "--adjustment")),
    "ionice": frozenset(("-c", "-n", "-p")),
    "stdbuf": frozenset(("-i", "-o", "-e")),
    "time": frozenset(("-f", "--format", "-o", "--output")),
    "timeout": frozenset(("-s", "--signal", "-k", "--kill-after")),
    "exec": frozenset(("-a",)),
    "command": frozenset(),
    "builtin": frozenset(),
    "xargs": frozenset(("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter")),
    "setsid": frozenset(),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "strace": frozenset(("-e", "-o", "-p", "-s", "-u")),
    "ltrace": frozenset(("-e", "-o", "-p", "-s", "-u")),
    "watch": frozenset(("-n", "--interval", "-d")),
}
# Launchers that find and run a program of a Python environment: ``uv run [opts] PROGRAM``.
_UV_RUN_VALUE_OPTIONS = frozenset(
    (
        *("--with", "--with-editable", "--with-requirements", "--python", "-p", "--package"),
        *("--project", "--directory", "--env-file", "--extra", "--group", "--only-group"),
        *("--no-group", "--index", "--default-index", "--index-url", "--extra-index-url"),
        *("--find-links", "-f", "--index-strategy", "--keyring-provider", "--resolution"),
        *("--prerelease", "--exclude-newer", "--link-mode", "--config-setting", "-C", "--refresh-package"),
        *("--reinstall-package", "--upgrade-package", "-P", "--cache-dir", "--color", "--config-file"),
        *("--allow-insecure-host", "--python-platform", "--no-binary-package", "--no-build-package"),
        *("--from", "--script", "-s"),
    )
)
_RUNNERS = ("poetry", "pdm", "hatch", "pipenv", "rye", "pixi")


def _basename(program: str) -> str:
    return program.rstrip("/").rsplit("/", 1)[-1]


def _is_python(program: str) -> bool:
    return bool(_PYTHON.match(_basename(program)))


def _skip_options(words: Sequence[str], i: int, with_value: frozenset[str]) -> int:
    """Index of the first word after the options starting at ``i`` (``--`` consumed)."""
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if not w.startswith("-") or w == "-":
            return i
        if w in with_value:
            i += 2
            continue
        i += 1
    return i


@dataclass(frozen=True)
class Context:
    project: str
    depth: int = 0

    def deeper(self) -> Context:
        if self.depth >= _MAX_DEPTH:
            raise Unparsable("commands nested too deep")
        return Context(self.project, self.depth + 1)


def judge_command(command: str, project: str) -> Verdict:
    """The verdict on one shell command text, for a project rooted at ``project``."""
    try:
        return _judge_text(command, Context(project))
    except Unparsable as exc:
        if mentions_python(command):
            return Verdict(
                False,
                f"Refused by the python-sb hook: this command could not be parsed ({exc}) and it mentions python: the hook cannot "
                "tell whether it runs Python without python-sb. Write it as plain shell, one command "
                "per line, and run Python through python-sb.",
            )
        return Verdict.allow()


def mentions_python(text: str) -> bool:
    return re.search(r"python|pypy", text, re.IGNORECASE) is not None


def _judge_text(text: str, ctx: Context) -> Verdict:
    parsed = parse(text)
    for sub in parsed.substitutions:
        verdict = _judge_text(sub, ctx.deeper())
        if not verdict.allowed:
            return verdict
    for command in parsed.commands:
        verdict = _judge_words(command.words, command, ctx)
        if not verdict.allowed:
            return verdict
    return Verdict.allow()


def _judge_words(words: Sequence[str], command: Command, ctx: Context, i: int = 0) -> Verdict:
    """The verdict on the simple command ``words``, whose program is looked for from ``i``."""
    while i < len(words):
        w = words[i]
        if _ASSIGNMENT.match(w) or w in _PREFIX_WORDS:
            i += 1
            continue
        name = _basename(w)
        if name == "command" and i + 1 < len(words) and words[i + 1] in ("-v", "-V"):
            return Verdict.allow()  # `command -v python3` looks the program up, runs nothing
        if name in _WRAPPERS:
            if name == "env":
                j = i + 1
                while j < len(words):
                    if words[j] in ("-S", "--split-string") and j + 1 < len(words):
                        return _judge_words([*split_words(words[j + 1]), *words[j + 2 :]], command, ctx)
                    if words[j].startswith("-S") and len(words[j]) > 2:
                        return _judge_words([*split_words(words[j][2:]), *words[j + 1 :]], command, ctx)
                    if words[j].startswith("-") and words[j] != "-":
                        j += 2 if words[j] in _WRAPPERS["env"] else 1
                    elif _ASSIGNMENT.match(words[j]):
                        j += 1
                    else:
                        break
                i = j
                continue
            i = _skip_options(words, i + 1, _WRAPPERS[name])
            if name == "timeout" and i < len(words):
                i += 1  # the duration
            elif name in ("chrt", "taskset") and i < len(words):
                i += 1  # the priority or the CPU mask
            continue
        if name == "uv" and i + 1 < len(words):
            j = _skip_options(words, i + 1, _UV_RUN_VALUE_OPTIONS)
            if j < len(words) and words[j] == "run":
                return _judge_uv_run(words, j + 1, command, ctx)
            if j + 1 < len(words) and words[j] == "tool" and words[j + 1] == "run":
                return _judge_uv_run(words, j + 2, command, ctx, tool=True)
            return Verdict.allow()
        if name == "uvx":
            return _judge_uv_run(words, i + 1, command, ctx, tool=True)
        if name in _RUNNERS and i + 1 < len(words) and words[i + 1] == "run":
            i = _skip_options(words, i + 2, frozenset())
            continue
        if name == "eval":
            return _judge_text(" ".join(words[i + 1 :]), ctx.deeper())
        if name in _SHELLS:
            return _judge_shell(words, i, command, ctx)
        if _is_python(w):
            return _refuse_python(words, i)
        if name == "python-sb":
            return judge_python_sb(words[i + 1 :], ctx.project)
        return Verdict.allow()
    return Verdict.allow()


def split_words(text: str) -> list[str]:
    """The words of ``env -S`` text (one simple command)."""
    parsed = parse(text)
    return parsed.commands[0].words if parsed.commands else []


def _judge_uv_run(
    words: Sequence[str], i: int, command: Command, ctx: Context, *, tool: bool = False
) -> Verdict:
    j = i
    while j < len(words):
        w = words[j]
        if w == "--":
            j += 1
            break
        if w in ("-m", "--module") and not tool:
            return _refuse(
                " ".join(words),
                "uv run -m starts the project's interpreter without python-sb",
                " ".join(_quote(w) for w in [*words[:j], "python-sb", *words[j:]]),
            )
        if not w.startswith("-"):
            break
        j += 2 if w in _UV_RUN_VALUE_OPTIONS else 1
    if j >= len(words):
        return Verdict.allow()
    program = words[j]
    if not tool and program.endswith((".py", ".pyw")):
        return _refuse(
            " ".join(words),
            "uv run SCRIPT.py starts the interpreter without python-sb",
            " ".join(_quote(w) for w in [*words[:j], "python-sb", *words[j:]]),
        )
    if not tool and program.startswith(("http://", "https://")):
        return _refuse(" ".join(words), "uv run URL runs a remote Python script without python-sb", "")
    return _judge_words(words, command, ctx, j)


def _judge_shell(words: Sequence[str], i: int, command: Command, ctx: Context) -> Verdict:
    """``sh -c TEXT``, ``bash -lc TEXT``; a shell reading a here-document or here-string."""
    j = i + 1
    while j < len(words) and words[j].startswith(("-", "+")) and words[j] not in ("-", "--"):
        flags = words[j]
        if flags.startswith("--"):  # --login, --norc, --rcfile FILE ...
            j += 2 if flags in ("--rcfile", "--init-file") else 1
            continue
        if "c" in flags[1:]:
            if j + 1 >= len(words):
                raise Unparsable(f"{words[i]} -c without a command")
            return _judge_text(words[j + 1], ctx.deeper())
        j += 2 if flags[1:] in ("o", "O") else 1
    if j < len(words):
        return Verdict.allow()  # a script file: out of sight (see the README's limits)
    for text in command.stdin_text:
        verdict = _judge_text(text, ctx.deeper())
        if not verdict.allowed:
            return verdict
    return Verdict.allow()


def _refuse_python(words: Sequence[str], i: int) -> Verdict:
    """Refuse the interpreter at ``words[i]``; the hint is the same command with python-sb."""
    instead = [*words[:i], "python-sb", *words[i + 1 :]]
    return _refuse(
        " ".join(_quote(w) for w in words),
        f"{_basename(words[i])} runs Python without the sandbox",
        " ".join(_quote(w) for w in instead),
    )


def _refuse(shown: str, why: str, instead: str) -> Verdict:
    hint = f" Run `{instead}` instead: the rules of .py-sandboxes apply." if instead else ""
    return Verdict(
        False,
        f"Refused by the python-sb hook: `{_shorten(shown)}`: {why}.{hint} If python-sb then refuses "
        "an access, do not fall back to python: check the code first, then report the refusal and "
        "propose the exact rule line to the user (the python-sb skill says how).",
    )


_FALSE_WORDS = frozenset(("false", "0", "no", "off"))


def judge_python_sb(args: Sequence[str], project: str) -> Verdict:
    """``python-sb`` options that switch the confinement off, read as python-sb reads them:
    options end at the script, ``-``, ``--``, ``-c CODE`` or ``-m MODULE``."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or arg == "-" or not arg.startswith("-"):
            break
        if not arg.startswith("--"):
            letters = arg[1:]
            stop = next((k for k, ch in enumerate(letters) if ch in "cmWX"), None)
            if stop is not None:
                if letters[stop] in "cm":
                    break
                i += 1 if stop + 1 < len(letters) else 2
                continue
            i += 1
            continue
        written, equals, value = arg[2:].partition("=")
        key = written.replace("_", "-")
        i += 1
        if key == "check-hash-based-pycs":
            i += 1
        elif key == "learn" and value.strip().lower() not in _FALSE_WORDS:
            return _refuse_sb(arg, "learning mode allows every access and records it instead of refusing")
        elif key == "py-sandbox" and value.strip().lower() in _FALSE_WORDS:
            return _refuse_sb(arg, "it turns the Python layer off")
        elif key == "os-sandbox" and value.strip().lower() == "none":
            return _refuse_sb(arg, "it turns the OS provider off")
        elif key == "pysandboxes-config":
            if not equals:
                value = args[i] if i < len(args) else ""
                i += 1
            if not _inside(value, project):
                return _refuse_sb(
                    f"--pysandboxes-config={value}",
                    f"it takes the rules from a file outside the project ({project})",
                )
    return Verdict.allow()


def _refuse_sb(option: str, why: str) -> Verdict:
    return Verdict(
        False,
        f"Refused by the python-sb hook: `python-sb {option}`: {why}. Run python-sb without this "
        "option, under the project's own rule file. If an access is refused, report it and propose "
        "the exact rule line to the user; only the user changes how the sandbox runs.",
    )


def _inside(path: str, project: str) -> bool:
    if not path or "$" in path or "`" in path or path.startswith("~"):
        return False  # a value the shell would still expand: not provably inside
    root = os.path.realpath(project)
    target = os.path.realpath(os.path.join(project, path))
    return target == root or target.startswith(root.rstrip("/") + "/")


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _shorten(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the agents' payloads ---------------------------------------------------------------------

# The shell tools of each agent, as named in their payloads (other tools pass untouched).
_SHELL_TOOLS = frozenset(("Bash", "bash", "run_shell_command", "shell", "exec_command", "local_shell"))


@dataclass(frozen=True)
class ToolCall:
    agent: str
    command: str | None  # None: not a shell tool call
    project: str


def detect_agent(payload: dict[str, object]) -> str:
    """Which agent sent this payload, from its shape (the manifests also say it with --agent)."""
    event = payload.get("hook_event_name")
    if "toolName" in payload or "toolArgs" in payload:
        return "copilot"
    if event == "beforeShellExecution" or "workspace_roots" in payload or "conversation_id" in payload:
        return "cursor"
    if event == "BeforeTool":
        return "gemini"
    if payload.get("tool_name") in ("bash", "powershell"):
        return "copilot"  # the VS Code compatible PascalCase payload
    if "turn_id" in payload:
        return "codex"
    return "claude"


def read_tool_call(payload: dict[str, object], agent: str) -> ToolCall:
    project = _project_of(payload)
    if agent == "cursor":
        command = payload.get("command")
        if command is None and isinstance(payload.get("tool_input"), dict):  # preToolUse on Shell
            command = payload["tool_input"].get("command")  # type: ignore[union-attr]
        return ToolCall(agent, command if isinstance(command, str) else None, project)
    if agent == "copilot" and ("toolName" in payload or "toolArgs" in payload):
        tool, args = payload.get("toolName"), payload.get("toolArgs")
    else:
        tool, args = payload.get("tool_name"), payload.get("tool_input")
    if tool not in _SHELL_TOOLS:
        return ToolCall(agent, None, project)
    if isinstance(args, str):  # Copilot CLI hands the arguments as a JSON text
        try:
            args = json.loads(args)
        except ValueError:
            args = {"command": args}
    command = args.get("command") if isinstance(args, dict) else None
    if isinstance(command, list):  # an argv list, as some shell tools take
        command = " ".join(_quote(str(w)) for w in command)
    return ToolCall(agent, command if isinstance(command, str) else None, project)


def _project_of(payload: dict[str, object]) -> str:
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    for key in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR"):
        if os.environ.get(key):
            return os.environ[key]
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else os.getcwd()


@dataclass(frozen=True)
class Answer:
    """What the hook prints and its exit status."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


def answer(agent: str, verdict: Verdict) -> Answer:
    """The agent's documented "deny" answer (see the README for the page each shape comes from)."""
    if verdict.allowed:
        return Answer(0, "{}\n" if agent in ("gemini", "cursor") else "")
    reason = verdict.reason
    if agent == "claude":
        out = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
        return Answer(0, json.dumps(out) + "\n")
    if agent == "codex":
        return Answer(2, "", reason + "\n")
    if agent == "gemini":
        return Answer(0, json.dumps({"decision": "deny", "reason": reason}) + "\n")
    if agent == "cursor":
        out = {"permission": "deny", "user_message": reason, "agent_message": reason}
        return Answer(0, json.dumps(out) + "\n")
    if agent == "copilot":
        out = {"permissionDecision": "deny", "permissionDecisionReason": reason}
        return Answer(0, json.dumps(out) + "\n")
    raise ValueError(f"unknown agent {agent!r}")


def run(stdin_text: str, agent: str | None = None) -> Answer:
    """The whole hook, pure: payload text in, answer out."""
    try:
        payload = json.loads(stdin_text)
        if not isinstance(payload, dict):
            raise ValueError("not an object")
    except ValueError:
        who = agent or "claude"
        if mentions_python(stdin_text):
            return answer(
                who,
                Verdict(
                    False,
                    "Refused by the python-sb hook: the tool call could not be read as JSON and it "
                    "mentions python.",
                ),
            )
        return answer(who, Verdict.allow())
    who = agent or detect_agent(payload)
    call = read_tool_call(payload, who)
    if call.command is None:
        return answer(who, Verdict.allow())
    try:
        verdict = judge_command(call.command, call.project)
    except Exception as exc:  # a bug of this hook must not let an interpreter through
        verdict = Verdict(
            not mentions_python(call.command),
            f"Refused by the python-sb hook: the command could not be checked ({type(exc).__name__}) "
            "and it mentions python.",
        )
    return answer(who, verdict)


def _arguments(argv: Sequence[str]) -> Iterator[str]:
    for i, arg in enumerate(argv):
        if arg.startswith("--agent="):
            yield arg.partition("=")[2]
        elif arg == "--agent" and i + 1 < len(argv):
            yield argv[i + 1]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    agents = list(_arguments(args))
    agent = agents[-1] if agents else None
    if agent is not None and agent not in AGENTS:
        print(f"require_python_sb.py: --agent must be one of {', '.join(AGENTS)}", file=sys.stderr)
        return 1
    result = run(sys.stdin.read(), agent)
    if result.stdout:
        sys.stdout.write(result.stdout)
    if result.stderr:
        sys.stderr.write(result.stderr)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
