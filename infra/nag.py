"""cdk-nag (v3) wiring: the AwsSolutions pack on every synth, and one helper to acknowledge.

Every acknowledgment goes through :func:`acknowledge`, which refuses an empty reason and
keeps a list (``ACKNOWLEDGED``) that tests and ``docs/deploy.md`` can show.
"""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

ACKNOWLEDGED: list[tuple[str, str, str]] = []  # (construct path, rule id, reason)


def enable(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    if len(reason.strip()) < 20:
        raise ValueError(f"cdk-nag acknowledgment {rule_id} on {scope.node.path} needs a real reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
    ACKNOWLEDGED.append((scope.node.path, rule_id, reason))


def arn_token(construct: IConstruct) -> str:
    """How cdk-nag renders ``construct``'s ``Fn::GetAtt [..., Arn]`` in a finding id."""
    element = cast(CfnElement, construct.node.default_child)
    return f"<{Stack.of(construct).get_logical_id(element)}.Arn>"
