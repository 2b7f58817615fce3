"""The flow pass: where every argument's value came from (provenance labels), before anything runs."""
