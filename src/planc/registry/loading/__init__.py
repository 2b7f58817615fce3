"""planc.toml loaded into a `Registry`: the reader, declared plans, `planc registry list`, edits. Imports every registry folder."""
