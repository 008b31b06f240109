"""The database as deployed: the functions reach the `batchlane` database through RDS Proxy, over TLS."""

from __future__ import annotations

import json

from infra_testlib import Synth, as_list, camel, statements_of

from deployment import topology


def test_every_database_function_connects_to_the_batchlane_database_through_the_proxy(synth: Synth) -> None:
    (cluster,) = synth.of_type("AWS::RDS::DBCluster").values()
    assert cluster["Properties"]["DatabaseName"] == "batchlane"  # the cluster creates it
    (proxy_id,) = synth.of_type("AWS::RDS::DBProxy")
    db_functions = [spec.name for spec in topology.FUNCTIONS if {"db", "db_admin"} & set(spec.needs)]
    assert "migrate" in db_functions  # the migrations custom resource connects the same way
    for name in db_functions:
        env = synth.resources[synth.logical_id(f"Compute/{camel(name)}")]["Properties"]["Environment"]["Variables"]
        assert env["DATABASE_NAME"] == "batchlane", name  # the generated secret has no dbname
        assert env["DATABASE_HOST"] == {"Fn::GetAtt": [proxy_id, "Endpoint"]}, name
        assert "BATCHLANE_DB_SSL_MODE" not in env  # verify-full, the default, against the system trust store


def test_the_proxy_requires_tls_and_reads_only_the_two_database_users_secrets(synth: Synth) -> None:
    ((proxy_id, proxy),) = synth.of_type("AWS::RDS::DBProxy").items()
    props = proxy["Properties"]
    assert props["RequireTLS"] is True and props["EngineFamily"] == "POSTGRESQL"
    secret_ids = set(synth.of_type("AWS::SecretsManager::SecretTargetAttachment"))
    assert secret_ids == {_master_secret(synth), _app_secret(synth)}  # the master (migrate) and batchlane_app
    assert {auth["SecretArn"]["Ref"] for auth in props["Auth"]} == secret_ids
    assert {auth["ClientPasswordAuthType"] for auth in props["Auth"]} == {"POSTGRES_SCRAM_SHA_256"}
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    statements = [s for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for s in statements_of(p)]
    assert {json.dumps(s["Action"]) for s in statements} == {json.dumps(["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"])}
    assert {r["Ref"] for s in statements for r in as_list(s["Resource"])} == secret_ids
    (target,) = synth.of_type("AWS::RDS::DBProxyTargetGroup").values()
    assert target["Properties"]["DBProxyName"] == {"Ref": proxy_id} and "Tags" not in target["Properties"]


def test_the_lambdas_reach_the_proxy_and_only_the_proxy_and_rotation_reach_the_cluster(synth: Synth) -> None:
    lambda_sg = synth.logical_id("Database/LambdaSg")
    proxy_sg = synth.logical_id("Database/ProxySg")
    cluster_sg = synth.logical_id("Database/DatabaseSg")
    rotation_sg = synth.logical_id("Database/RotationSg")
    sources: dict[str, set[str]] = {}
    for rule in synth.of_type("AWS::EC2::SecurityGroupIngress").values():
        props = rule["Properties"]
        sources.setdefault(props["GroupId"]["Fn::GetAtt"][0], set()).add(props["SourceSecurityGroupId"]["Fn::GetAtt"][0])
    assert sources[proxy_sg] == {lambda_sg}
    assert sources[cluster_sg] == {proxy_sg, rotation_sg}


def test_iam_database_authentication_is_off_and_no_function_may_connect_with_it(synth: Synth) -> None:
    """Enabled but unused, it was only attack surface: functions sign in with the secret (docs/deploy.md)."""
    (cluster,) = synth.of_type("AWS::RDS::DBCluster").values()
    assert cluster["Properties"].get("EnableIAMDatabaseAuthentication") in (None, False)
    assert "rds-db:connect" not in json.dumps(synth.of_type("AWS::IAM::Policy"))


def _master_secret(synth: Synth) -> str:
    return synth.logical_id("Database/Cluster/Secret/Attachment")


def _app_secret(synth: Synth) -> str:
    return synth.logical_id("Database/AppSecret/Attachment")


def _secrets_read_by(synth: Synth, name: str) -> set[str]:
    role_id = synth.logical_id(f"Compute/{camel(name)}Role")
    return {
        resource["Ref"]
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in statements_of(p)
        if "secretsmanager:GetSecretValue" in as_list(s["Action"])
        for resource in as_list(s["Resource"])
        if isinstance(resource, dict) and "Ref" in resource
    }


def test_only_migrate_may_read_the_master_secret_every_other_db_function_reads_the_app_secret(synth: Synth) -> None:
    """Issue 15: every function signed in as the master; now the functions are batchlane_app (DML only)."""
    master, app = _master_secret(synth), _app_secret(synth)
    for spec in topology.FUNCTIONS:
        read = _secrets_read_by(synth, spec.name)
        env = synth.resources[synth.logical_id(f"Compute/{camel(spec.name)}")]["Properties"]["Environment"]["Variables"]
        if spec.name == "migrate":
            assert {master, app} <= read  # signs in as the master, sets the app role's password
            assert env["DATABASE_SECRET_ARN"] == {"Ref": master} and env["DATABASE_APP_SECRET_ARN"] == {"Ref": app}
        elif "db" in spec.needs:
            assert master not in read and app in read, spec.name
            assert env["DATABASE_SECRET_ARN"] == {"Ref": app}, spec.name
        else:
            assert master not in read and app not in read, spec.name
    readers = {spec.name for spec in topology.FUNCTIONS if master in _secrets_read_by(synth, spec.name)}
    assert readers == {"migrate"}


def test_the_app_secret_is_for_batchlane_app_and_rotates_after_migrate_created_the_role(synth: Synth) -> None:
    from batchlane.db.migrate import APP_ROLE as MIGRATE_ROLE
    from infra.database import APP_ROLE

    assert APP_ROLE == MIGRATE_ROLE == "batchlane_app"
    secret = synth.resources[synth.logical_id("Database/AppSecret")]["Properties"]
    assert json.loads(secret["GenerateSecretString"]["SecretStringTemplate"]) == {"username": "batchlane_app"}
    schedules = {
        sid: r for sid, r in synth.of_type("AWS::SecretsManager::RotationSchedule").items() if r["Properties"]["SecretId"] == {"Ref": _app_secret(synth)}
    }
    ((_, schedule),) = schedules.items()
    assert "HostedRotationLambda" in schedule["Properties"]
    assert synth.logical_id("Database/Migrations/Default") in as_list(schedule.get("DependsOn", []))
