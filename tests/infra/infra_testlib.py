"""What the infra tests share: one synthesized app and a few template helpers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App
from aws_cdk.assertions import Template

from infra import REPO_ROOT
from infra.app import build

CDK_JSON = REPO_ROOT / "cdk.json"


@dataclass
class Synth:
    outdir: Path
    template: dict[str, Any]
    layer_dir: Path
    by_path: dict[str, str] = field(default_factory=dict)  # construct path → logical id

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]

    @property
    def assertions(self) -> Template:
        return Template.from_json(self.template)

    def logical_id(self, construct_path: str) -> str:
        """Logical id of ``Batchlane/<construct_path>/Resource`` (or of that exact path)."""
        for candidate in (f"Batchlane/{construct_path}/Resource", f"Batchlane/{construct_path}"):
            if candidate in self.by_path:
                return self.by_path[candidate]
        raise KeyError(f"no resource at {construct_path}")

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == cfn_type}


def context_of_cdk_json() -> dict[str, Any]:
    return json.loads(CDK_JSON.read_text())["context"]


def synth_app(outdir: Path, layer_dir: Path, extra_context: dict[str, Any] | None = None) -> Synth:
    """Synthesize like `make synth` (cdk.json context), cdk-nag included."""
    context = context_of_cdk_json()
    # What the CDK CLI sets: construct paths and asset paths in resource metadata.
    context.update({"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True})
    context.update(extra_context or {})
    app = App(outdir=str(outdir), context=context)
    build(app, layer_dir=layer_dir)
    app.synth()  # raises when cdk-nag reports an unacknowledged finding
    return synth_from_template(outdir, layer_dir, json.loads((outdir / "Batchlane.template.json").read_text()))


def synth_from_template(outdir: Path, layer_dir: Path, template: dict[str, Any]) -> Synth:
    by_path = {r.get("Metadata", {}).get("aws:cdk:path"): k for k, r in template["Resources"].items()}
    return Synth(outdir=outdir, template=template, layer_dir=layer_dir, by_path=by_path)


def statements_of(resource: dict[str, Any]) -> list[dict[str, Any]]:
    """Policy statements of an AWS::IAM::Policy / ManagedPolicy resource."""
    return resource["Properties"]["PolicyDocument"]["Statement"]


def all_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for resource in template["Resources"].values():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            out += statements_of(resource)
        if resource["Type"] == "AWS::IAM::Role":
            for policy in resource["Properties"].get("Policies", []):
                out += policy["PolicyDocument"]["Statement"]
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
