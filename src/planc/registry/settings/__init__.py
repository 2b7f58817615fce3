"""What planc.toml declares, as typed values with their defaults; where the nearest planc.toml is; its errors. Imports `provenance/`."""
