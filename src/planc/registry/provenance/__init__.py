"""Provenance labels: interned sets, a schema's `x-labels`, the labels of an expression, what a loop
or an `exit` decides, and `secret` redaction (with the user's key file). Imports no other registry
folder."""
