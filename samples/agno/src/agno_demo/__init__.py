"""An agno ``Agent`` whose three tools run in the sandbox."""
