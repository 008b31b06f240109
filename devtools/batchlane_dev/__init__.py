"""Developer tooling around the runtime package: the offline stack and emulator, the CLI, the benchmarks, the demo report.

Never shipped to Lambda; ``batchlane`` (the layer) must not import it (tests/unit/test_import_rules.py).
"""
