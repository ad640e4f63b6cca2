"""A google-adk agent (``LlmAgent`` run by an ``InMemoryRunner``) whose three tools run in the
sandbox."""
