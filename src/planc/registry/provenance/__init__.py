"""Provenance labels: interned sets, a schema's `x-labels`, `secret` redaction. Imports no other registry folder."""
