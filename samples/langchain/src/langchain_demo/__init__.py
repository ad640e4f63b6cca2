"""A LangChain agent (``create_agent``) whose three tools run in the sandbox."""
