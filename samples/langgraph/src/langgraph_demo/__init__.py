"""A LangGraph ``StateGraph`` whose ``ToolNode`` runs the three sandboxed tools."""
