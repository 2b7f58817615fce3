"""The optimizer: legal rewrites of a checked plan, each reported as a note."""
