"""smolagents agents whose tools, and whose model-written code, run in the sandbox."""
