"""``python -m smolagents_demo``: the chat (``--code``: the CodeAgent)."""

import sys

from .chat import main

sys.exit(main(sys.argv[1:]))
