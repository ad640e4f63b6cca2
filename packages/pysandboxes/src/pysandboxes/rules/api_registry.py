"""The registry of sensitive Python APIs that ``python-api=`` rules name.

Every function here is refused by default, whatever ``python-import=`` allows: an import right
is not a call right. A name stays valid in rules even where the running Python or platform
lacks it, so a profile stays portable.
"""

from __future__ import annotations

from types import MappingProxyType

_OS_EXEC = [
    f"os.{n}" for n in ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")
]
_OS_SPAWN = [
    f"os.{n}"
    for n in ("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe")
]


def _twins(names: str, module: str) -> list[str]:
    """The same functions under the C module that ``os`` / ``signal`` re-export."""
    return [f"{module}.{n}" for n in names.split()]


CATEGORIES: MappingProxyType[str, tuple[str, str]] = MappingProxyType(
    {
        # category: (help shown in the template and by explain, functions joined by spaces)
        "process-exec": (
            "start another program or a copy of this process",
            " ".join(
                [
                    "os.system",
                    "os.popen",
                    *_OS_EXEC,
                    *_OS_SPAWN,
                    "os.posix_spawn",
                    "os.posix_spawnp",
                    "os.fork",
                    "os.forkpty",
                    "os.startfile",
                    "subprocess.Popen",
                    "subprocess.run",
                    "subprocess.call",
                    "subprocess.check_call",
                    "subprocess.check_output",
                    "subprocess.getoutput",
                    "subprocess.getstatusoutput",
                    "_posixsubprocess.fork_exec",
                    "_winapi.CreateProcess",
                    "pty.spawn",
                    "pty.fork",
                    "multiprocessing.Process.start",
                    "multiprocessing.process.BaseProcess.start",
                    "_xxsubinterpreters.create",
                    "_interpreters.create",
                    "concurrent.interpreters.create",
                    "_testinternalcapi.create_interpreter",
                    "_testinternalcapi.run_in_subinterp_with_config",
                    "_testcapi.run_in_subinterp",
                    "_testcapi.run_in_subinterp_with_config",
                    *_twins("system execv execve posix_spawn posix_spawnp fork forkpty", "posix"),
                    *_twins("system execv execve spawnv spawnve startfile", "nt"),
                ]
            ),
        ),
        "process-control": (
            "signal, renice or limit processes",
            " ".join(
                [
                    "os.kill",
                    "os.killpg",
                    "os.nice",
                    "os.setpriority",
                    "os.abort",
                    "os.setsid",
                    "os.setpgid",
                    "os.setpgrp",
                    "os.pidfd_open",
                    "signal.alarm",
                    "signal.setitimer",
                    "signal.raise_signal",
                    "signal.pthread_kill",
                    "signal.pidfd_send_signal",
                    "resource.setrlimit",
                    "resource.prlimit",
                    "sys.remote_exec",
                    *_twins("kill killpg nice setpriority abort setsid setpgid setpgrp", "posix"),
                    *_twins("kill abort", "nt"),
                    *_twins("alarm setitimer raise_signal pthread_kill", "_signal"),
                ]
            ),
        ),
        "privileges": (
            "change user, group, namespaces or the file-creation mask",
            " ".join(
                [
                    "os.setuid",
                    "os.setgid",
                    "os.seteuid",
                    "os.setegid",
                    "os.setreuid",
                    "os.setregid",
                    "os.setresuid",
                    "os.setresgid",
                    "os.setgroups",
                    "os.initgroups",
                    "os.unshare",
                    "os.setns",
                    "os.umask",
                    "os.chroot",
                    *_twins(
                        "setuid setgid seteuid setegid setreuid setregid setgroups setresuid "
                        "setresgid initgroups unshare setns umask",
                        "posix",
                    ),
                    *_twins("umask", "nt"),
                ]
            ),
        ),
        "threads": (
            "start threads or change how they run",
            " ".join(
                [
                    "_thread.start_new_thread",
                    "_thread.start_new",
                    "_thread.start_joinable_thread",
                    "_thread.interrupt_main",
                    "_thread.stack_size",
                    "threading.Thread.start",
                    "threading._start_new_thread",
                    "threading._start_joinable_thread",
                    "threading.settrace",
                    "threading.setprofile",
                    "threading.stack_size",
                ]
            ),
        ),
        "native": (
            "load native libraries and read or write raw memory",
            " ".join(
                [
                    "ctypes.CDLL",
                    "ctypes.PyDLL",
                    "ctypes.cdll",
                    "ctypes.pydll",
                    "ctypes.pythonapi",
                    "ctypes.cast",
                    "ctypes.string_at",
                    "ctypes.wstring_at",
                    "ctypes.memmove",
                    "ctypes.memset",
                    "ctypes._dlopen",
                    "_ctypes.dlopen",
                    "_ctypes.dlsym",
                    "_ctypes.LoadLibrary",
                    "_ctypes.call_function",
                    "_ctypes.call_cdeclfunction",
                ]
            ),
        ),
        "introspection": (
            "reach the interpreter's internals: tracing, audit hooks, the object graph",
            " ".join(
                [
                    "importlib.reload",
                    "sys.settrace",
                    "sys.setprofile",
                    "sys._settraceallthreads",
                    "sys._setprofileallthreads",
                    "threading.settrace_all_threads",
                    "threading.setprofile_all_threads",
                    "sys.monitoring.use_tool_id",
                    "sys.monitoring.register_callback",
                    "sys.monitoring.set_events",
                    "sys.addaudithook",
                    "gc.get_objects",
                    "gc.get_referrers",
                    "gc.get_referents",
                    "faulthandler.enable",
                    "faulthandler.register",
                    "faulthandler.dump_traceback_later",
                ]
            ),
        ),
        "dynamic-code": (
            "run code given as a string or built as a code object (see the eval-* rules for a "
            "guarded alternative)",
            # types.CodeType: code.__new__ and code.replace() called by the program's own code
            "builtins.eval builtins.exec builtins.compile types.CodeType",
        ),
        "deserialization": (
            "rebuild objects from pickled bytes (can run arbitrary code)",
            " ".join(
                [
                    "pickle.loads",
                    "pickle.load",
                    "pickle.Unpickler",
                    "pickle._loads",
                    "pickle._load",
                    "pickle._Unpickler",
                    "_pickle.loads",
                    "_pickle.load",
                    "_pickle.Unpickler",
                ]
            ),
        ),
    }
)

#: category -> the functions it holds
FUNCTIONS_BY_CATEGORY: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {cat: tuple(names.split()) for cat, (_help, names) in CATEGORIES.items()}
)

#: function -> its category
CATEGORY_OF: MappingProxyType[str, str] = MappingProxyType(
    {fn: cat for cat, fns in FUNCTIONS_BY_CATEGORY.items() for fn in fns}
)

#: categories whose grant deserves a warning mark in learned profiles and in ``check``
RISKY_CATEGORIES = frozenset(
    {"process-exec", "privileges", "native", "introspection", "dynamic-code", "deserialization"}
)


def category_help(category: str) -> str:
    return CATEGORIES[category][0]
