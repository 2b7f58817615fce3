"""Stored plans and the run store."""
