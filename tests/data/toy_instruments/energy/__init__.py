"""A toy instrument, "energy": the joules each cell of a run used, kept with the run through
the store's seam and shown by ``show`` and the report, with no core file edited."""
