"""CDK entry point: ``python -m infra.app`` (cdk.json), run from the repository root.

The stack is environment-agnostic (no ``env``): synth needs no AWS account or network,
and ``cdk deploy`` targets the account and region of the caller's credentials.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # also runnable as `python infra/app.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aws_cdk import App

from infra import nag
from infra.config import load
from infra.stack import BatchlaneStack

# Behaviour the stack relies on, set here so that tests (``App(...)``) and ``cdk synth``
# agree whatever cdk.json says.
FEATURE_FLAGS = {
    # Server access logs are granted by bucket policy (the log bucket keeps BucketOwnerEnforced, no ACLs).
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
}


def build(app: App, layer_dir: Path | None = None) -> BatchlaneStack:
    """Add the stack and the cdk-nag AwsSolutions checks to ``app``."""
    for flag, value in FEATURE_FLAGS.items():
        app.node.set_context(flag, value)
    config = load(app.node)
    stack = BatchlaneStack(app, "Batchlane", config=config, layer_dir=layer_dir)
    nag.enable(app)
    return stack


def main() -> None:
    app = App()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
