"""One naming convention for every ``--json`` output: the API's camelCase (docs/operations.md).

The rule lives in the runtime package (``batchlane.naming``), so the API's answers and the CLI's own reports
(``demo --json``) follow the same one; re-exported here for the CLI.
"""

from __future__ import annotations

from batchlane.naming import api_case, camel

__all__ = ["api_case", "camel"]
