"""``python -m openai_agents_demo``: the chat."""

import sys

from .chat import main

sys.exit(main())
