"""A single-file job's use cases (was ``conversion/``): create, split, start, chunk, assemble, settle, retry,
budget, estimate, dry run. Folder jobs are ``folders/``; the lane's steps are ``batch/``."""
