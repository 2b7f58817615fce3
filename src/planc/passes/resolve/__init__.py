"""Resolve: what every name, reference and label of a plan refers to."""
