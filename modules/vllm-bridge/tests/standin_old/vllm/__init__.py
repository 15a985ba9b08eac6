"""Stand-in for an older vLLM (tests only): a connector base from before SupportsHMA."""
