"""The batchlane CDK app: one stack (``BatchlaneStack``) composed of small constructs.

Entry point: ``python -m infra.app`` (what ``cdk.json`` runs). The deployment's shape —
functions, state machines, rules, schedules and each function's capabilities — is read
from ``deployment.topology`` so the CDK app and the offline stack cannot drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = REPO_ROOT / "layers" / "batchlane"

# The app imports the shared package's topology and settings (pure Python, no AWS calls).
if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))
