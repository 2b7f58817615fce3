"""Cost: what a plan may spend, as ranges, and the budgets it must keep."""
