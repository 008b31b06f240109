"""The conversion use cases: create a job, process a chunk, assemble, settle."""
