"""``python -m mcp_client``: the chat."""

import sys

from .chat import main

sys.exit(main())
