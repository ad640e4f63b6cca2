"""A pydantic-ai ``Agent`` whose three tools run in the sandbox (``SandboxedToolset``)."""
