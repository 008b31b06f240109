"""migrate: applies the SQL migrations. Also the CloudFormation custom resource (Create/Update).

``{"action": "status"}`` changes nothing and reports the migrations and the session's TLS state
(``batchlane doctor`` invokes it: the database is reachable only from inside the VPC).
"""

from typing import Any

from batchlane.db.migrate import migrate, migration_status
from batchlane.handlers import lambda_handler
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("action") == "status":
        return migration_status(services().db)
    if event.get("RequestType") == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", "batchlane-migrations")}
    applied = migrate(services().db)
    return {"PhysicalResourceId": "batchlane-migrations", "Data": {"Applied": ",".join(applied) or "none"}}
