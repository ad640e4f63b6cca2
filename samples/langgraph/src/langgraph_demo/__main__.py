"""``python -m langgraph_demo``: the chat."""

import sys

from .chat import main

sys.exit(main())
