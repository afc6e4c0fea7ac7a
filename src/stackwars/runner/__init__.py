"""Running cells: planning, the worker process, and isolating it."""
