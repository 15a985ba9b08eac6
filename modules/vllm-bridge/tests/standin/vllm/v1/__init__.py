"""Stand-in for vLLM (tests only, never shipped): the shapes of the newest upstream connector API."""
