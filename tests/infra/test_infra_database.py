"""The database as deployed: the functions reach the `batchlane` database through RDS Proxy, over TLS."""

from __future__ import annotations

import json

from infra_testlib import Synth, camel, statements_of

from batchlane import topology


def test_every_database_function_connects_to_the_batchlane_database_through_the_proxy(synth: Synth) -> None:
    (cluster,) = synth.of_type("AWS::RDS::DBCluster").values()
    assert cluster["Properties"]["DatabaseName"] == "batchlane"  # the cluster creates it
    (proxy_id,) = synth.of_type("AWS::RDS::DBProxy")
    db_functions = [spec.name for spec in topology.FUNCTIONS if "db" in spec.needs]
    assert "migrate" in db_functions  # the migrations custom resource connects the same way
    for name in db_functions:
        env = synth.resources[synth.logical_id(f"Compute/{camel(name)}")]["Properties"]["Environment"]["Variables"]
        assert env["DATABASE_NAME"] == "batchlane", name  # the generated secret has no dbname
        assert env["DATABASE_HOST"] == {"Fn::GetAtt": [proxy_id, "Endpoint"]}, name
        assert "BATCHLANE_DB_SSL_MODE" not in env  # verify-full, the default, against the system trust store


def test_the_proxy_requires_tls_and_reads_only_the_cluster_secret(synth: Synth) -> None:
    ((proxy_id, proxy),) = synth.of_type("AWS::RDS::DBProxy").items()
    props = proxy["Properties"]
    assert props["RequireTLS"] is True and props["EngineFamily"] == "POSTGRESQL"
    (auth,) = props["Auth"]
    (secret_id,) = synth.of_type("AWS::SecretsManager::SecretTargetAttachment")
    assert auth["SecretArn"] == {"Ref": secret_id} and auth["ClientPasswordAuthType"] == "POSTGRES_SCRAM_SHA_256"
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    statements = [s for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for s in statements_of(p)]
    assert statements == [{"Action": ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"], "Effect": "Allow", "Resource": {"Ref": secret_id}}]
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
