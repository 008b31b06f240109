"""The folder-access role: users' buckets as one owner's folder job may see them.

The folder functions (topology ``needs`` "folder_access") assume it with the session tag
``owner=<Cognito sub>``; its policy names ``${aws:PrincipalTag/owner}`` in place of ``{owner}`` in
each ``folderSources`` entry, so a bug in folders/spec.check_allowed still cannot read, list or
write another owner's home (docs/deploy.md "Folder jobs"). Only those functions' roles are trusted,
and only with that one tag.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from constructs import Construct

from batchlane.contract import OWNER_TAG
from deployment.grants import folder_access_grants, owner_folder_resource
from infra.iam import GrantTargets, grant_statements
from infra.nag import acknowledge, arn_token


class FolderAccess(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, targets: GrantTargets, callers: list[iam.IRole]) -> None:
        super().__init__(scope, construct_id)
        trusted = iam.CompositePrincipal(*(iam.ArnPrincipal(role.role_arn) for role in callers))
        self.role = iam.Role(
            self,
            "Role",
            description="batchlane folder jobs: users' buckets, within the job owner's folder sources only (session tag owner)",
            assumed_by=iam.SessionTagsPrincipal(trusted).with_conditions({"ForAllValues:StringEquals": {"aws:TagKeys": [OWNER_TAG]}}),
            max_session_duration=Duration.hours(1),
        )
        for statement in grant_statements(folder_access_grants(targets.folder_sources), targets):
            self.role.add_to_policy(statement)
        for source in sorted({owner_folder_resource(s) for s in targets.folder_sources}):
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{source}*]",
                "A folder job reads PDFs and writes Markdown under its owner's granted folder source only; the key names are the user's.",
            )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::{arn_token(targets.bucket)}/jobs/*]",
            "The copy of a converted file's Markdown reads its source under jobs/ with these credentials; job ids are generated.",
        )
