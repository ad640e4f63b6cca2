"""``python -m google_adk_demo``: the chat."""

import sys

from .chat import main

sys.exit(main())
