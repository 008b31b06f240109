"""Formats beside PDF: type detection, the deterministic converters of born-digital documents, renderings (docs/formats.md)."""
