"""A Strands agent (``strands.Agent``) whose three tools run in the sandbox."""
