"""Folder jobs: convert every PDF under a folder of the user's bucket (docs/architecture.md "Folder jobs")."""
