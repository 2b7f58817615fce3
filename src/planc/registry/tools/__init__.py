"""A tool and its kinds: the one `Tool` shape, Python functions, SQL over SQLite and PostgreSQL, learned shapes, signatures. Imports `provenance/`."""
