"""From a task to a checked plan: the prompt that teaches a model the language and a registry, and the loop that sends diagnostics back until the plan checks."""
