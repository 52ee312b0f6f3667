"""Results history, verdicts and performance pages."""
