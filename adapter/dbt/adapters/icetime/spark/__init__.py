"""The Spark side of icetime: which Spark line runs, and the Apache jars that match it."""
