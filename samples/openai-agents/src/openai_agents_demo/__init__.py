"""An OpenAI Agents SDK ``Agent`` whose three tools run in the sandbox (``sandboxed_function_tool``)."""
