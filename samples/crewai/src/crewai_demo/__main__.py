"""``python -m crewai_demo``: the chat."""

import sys

from .chat import main

sys.exit(main())
