"""migrate: applies the SQL migrations. Also the CloudFormation custom resource (Create/Update).

It signs in as the master user (the only function with the master secret), then keeps the
application role ``batchlane_app`` the other functions use: password from its secret, DML only.
``{"action": "status"}`` changes nothing and reports the migrations and the session's TLS state
(``batchlane doctor`` invokes it: the database is reachable only from inside the VPC).
``{"action": "record_page_form", ...}`` stores the page form ``doctor --live`` found (db/page_forms.py);
``{"action": "record_service_tier", ...}`` its Flex probe (db/service_tiers.py).
"""

from typing import Any

from batchlane.db.migrate import migrate, migration_status
from batchlane.db.page_forms import record_doctor_form
from batchlane.db.service_tiers import record_probe
from batchlane.handlers import lambda_handler
from batchlane.runtime import admin_database, app_role_password


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    db = admin_database()
    if event.get("action") == "status":
        return migration_status(db)
    if event.get("action") == "record_page_form":
        return record_doctor_form(db, event)
    if event.get("action") == "record_service_tier":
        return record_probe(db, event)
    if event.get("RequestType") == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", "batchlane-migrations")}
    applied = migrate(db, app_password=app_role_password())
    return {"PhysicalResourceId": "batchlane-migrations", "Data": {"Applied": ",".join(applied) or "none"}}
