"""Results: the versioned schema, machine metadata, and where results are written."""
