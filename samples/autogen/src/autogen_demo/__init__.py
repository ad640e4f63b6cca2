"""An AutoGen agent (agentchat ``AssistantAgent``) whose three tools run in the sandbox."""
