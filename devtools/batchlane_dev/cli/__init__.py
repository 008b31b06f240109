"""The ``batchlane`` command (never shipped in the layer)."""
