"""Types: the JSON Schema of every value, checked against what receives it."""
