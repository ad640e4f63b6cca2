"""A crewai Crew whose agent's three tools run in the sandbox."""
