"""Strategy of batch/v1 Job."""
