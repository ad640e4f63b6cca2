"""Read ~/.ssh/id_demo from C code, where the Python layer cannot look.

ctypes calls the C library's open() and read() directly, as a compiled extension would. The
Python layer can refuse ctypes itself (the rule file does), not what the C code does once it
runs: only the OS provider can. The demo grants ctypes on the command line
(--python-import=ctypes --python-api=ALLOW:native) to show what each provider does then:
subprocess lets the C code read the key, landlock does not.
"""

import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
path = os.path.expanduser("~/.ssh/id_demo")
fd = libc.open(path.encode(), os.O_RDONLY)
if fd < 0:
    print(f"C code could not open {path}: {os.strerror(ctypes.get_errno())}")
else:
    buffer = ctypes.create_string_buffer(64)
    size = libc.read(fd, buffer, 64)
    libc.close(fd)
    print(f"C code read {path}: {buffer.raw[:size].decode().splitlines()[0]}")
