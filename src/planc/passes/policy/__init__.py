"""Policy: every call a plan may make, judged by a Cedar policy."""
