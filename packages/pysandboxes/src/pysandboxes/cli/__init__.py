"""Command lines: ``python-sb`` and ``pysandboxes`` (this room only wires)."""
