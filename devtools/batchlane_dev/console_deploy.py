"""Upload the built console (console/dist) to the stack's console bucket, with the sign-in settings it reads.

Run by `make deploy` after `cdk deploy`: the settings (user pool, the console's app client, its URL) are
stack outputs, known only once the stack exists. Usage: python -m batchlane_dev.console_deploy [STACK]
"""

from __future__ import annotations

import json
import mimetypes
import sys
from pathlib import Path
from urllib.parse import urlencode

import boto3

DIST = Path(__file__).resolve().parents[2] / "console" / "dist"


def console_config(outputs: dict[str, str]) -> dict[str, str]:
    """What console/src/auth.js needs for Cognito's hosted sign-in with PKCE, and its sign-out: Cognito's LOGOUT
    endpoint (``<domain>/logout?client_id=…&logout_uri=…``, the logout URL the app client allows)."""
    query = urlencode({"client_id": outputs["ConsoleClientId"], "logout_uri": outputs["ConsoleUrl"]})
    return {
        "mode": "cognito",
        "authority": f"https://cognito-idp.{outputs['Region']}.amazonaws.com/{outputs['UserPoolId']}",
        "clientId": outputs["ConsoleClientId"],
        "redirectUri": outputs["ConsoleUrl"],
        "logoutUrl": f"{outputs['ConsoleSignInDomain'].rstrip('/')}/logout?{query}",
    }


def main(stack: str = "Batchlane") -> None:
    described = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    s3 = boto3.client("s3")
    bucket = outputs["ConsoleBucketName"]
    for path in sorted(p for p in DIST.rglob("*") if p.is_file()):
        key = path.relative_to(DIST).as_posix()
        kind = "text/javascript" if path.suffix == ".mjs" else mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        cache = "public, max-age=31536000, immutable" if key.startswith("assets/") else "no-cache"
        s3.upload_file(str(path), bucket, key, ExtraArgs={"ContentType": kind, "CacheControl": cache})
    s3.put_object(
        Bucket=bucket, Key="console-config.json", Body=json.dumps(console_config(outputs)).encode(), ContentType="application/json", CacheControl="no-cache"
    )
    print(f"console uploaded: {outputs['ConsoleUrl']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
