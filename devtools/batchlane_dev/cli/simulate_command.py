"""`batchlane simulate`: the scale model (batchlane_dev.sim, docs/scale.md) with the operator's own numbers."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from batchlane.naming import api_json, camel
from batchlane_dev.sim import AwsModel, DbModel, Workload, ideal_hours, simulate


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


@click.command()
@click.option("--documents", type=click.IntRange(1), default=1_000_000, show_default=True, help="Documents of a folder submitted up front.")
@click.option("--pages-per-document", type=click.IntRange(1), default=10, show_default=True)
@click.option("--folders", type=click.IntRange(0), default=1, show_default=True, help="Folder jobs the documents come in (0: single submissions).")
@click.option("--owners", type=click.IntRange(1), default=1, show_default=True)
@click.option("--pages-per-hour", type=float, default=0.0, help="A steady stream instead (pages an hour, for --hours), e.g. 100000.")
@click.option("--hours", type=float, default=24.0, show_default=True, help="With --pages-per-hour: how long the stream lasts.")
@click.option("--aws", "aws_values", multiple=True, metavar="NAME=VALUE", help=f"An AWS quota of the model ({', '.join(_fields(AwsModel))}).")
@click.option("--db", "db_values", multiple=True, metavar="NAME=VALUE", help=f"Database work per unit ({', '.join(_fields(DbModel))}).")
@click.option("--set", "settings_values", multiple=True, metavar="NAME=VALUE", help="A batchlane setting, e.g. BATCHLANE_FOLDER_MAX_IN_FLIGHT=10000.")
@click.option("--step-s", type=float, default=300.0, show_default=True, help="The model's clock step (the packer's turn).")
@click.option("--horizon-days", type=float, default=365.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (Simulation in docs/api/openapi.yaml) instead of the summary.")
def simulate_command(
    documents: int,
    pages_per_document: int,
    folders: int,
    owners: int,
    pages_per_hour: float,
    hours: float,
    aws_values: tuple[str, ...],
    db_values: tuple[str, ...],
    settings_values: tuple[str, ...],
    step_s: float,
    horizon_days: float,
    as_json: bool = False,
) -> None:
    """Time to drain, the quota that binds at each stage, cost against all on-demand, database load (--json: one JSON object)."""
    from batchlane.config import Settings

    workload = Workload(
        documents=documents, pages_per_document=pages_per_document, folders=folders, owners=owners, arrival_pages_per_hour=pages_per_hour, arrival_hours=hours
    )
    aws = dataclasses.replace(AwsModel(), **_typed(AwsModel, aws_values))
    db = dataclasses.replace(DbModel(), **_typed(DbModel, db_values))
    overrides = {name.lower(): value for name, value in (_pair(v) for v in settings_values)}
    settings = Settings.model_validate(
        {"batch_conversion_enabled": True, "batch_conversion_s3_bucket": "sim", "batch_conversion_role_arn": "arn:aws:iam::1:role/sim", **overrides}
    )
    result = simulate(workload, aws, db, settings, step_s=step_s, horizon_h=horizon_days * 24)
    out = simulation_json(result.to_json(), ideal=ideal_hours(workload, aws), aws=dataclasses.asdict(aws), db=dataclasses.asdict(db))
    if as_json:
        click.echo(json.dumps(out))
        return
    drained = f"drained in {out['hoursToDrain']:g} h" if out["drained"] else f"NOT drained within {horizon_days:g} days"
    click.echo(f"{out['scenario']}: {out['documents']} documents, {out['pages']} pages; {drained} (ideal {out['idealHours']:g} h)")
    click.echo(f"  lanes    {out['pagesBatch']} pages batch in {out['bedrockJobs']} Bedrock jobs, {out['pagesOnDemand']} on-demand")
    click.echo(f"  cost     ${out['costUsd']} (all on-demand ${out['allOnDemandUsd']}; saving {out['savingPct']}%)")
    click.echo("  binding  " + ", ".join(f"{stage} {limit}" for stage, limit in out["binding"].items()))
    for note in out["notes"]:
        click.echo(f"  note     {note}")


def simulation_json(result: dict[str, Any], *, ideal: float, aws: dict[str, Any], db: dict[str, Any]) -> dict[str, Any]:
    """The result camelCase with amounts as decimal strings (the API's shape); a limit's name stays as the settings
    and ``binding`` spell it (``folder_max_in_flight``), since it is data, not a field."""
    limited = result.pop("limited_minutes")
    out: dict[str, Any] = api_json({**result, "ideal_hours": ideal, "aws": aws, "db_model": db})
    out["limitedMinutes"] = {camel(stage): dict(minutes) for stage, minutes in limited.items()}
    return out


def _pair(value: str) -> tuple[str, str]:
    name, sep, raw = value.partition("=")
    if not sep:
        raise click.BadParameter(f"{value!r}: expected NAME=VALUE")
    return name.strip(), raw.strip()


def _typed(cls: type, values: tuple[str, ...]) -> dict[str, Any]:
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for name, raw in map(_pair, values):
        if name not in types:
            raise click.BadParameter(f"{name}: not one of {', '.join(types)}")
        out[name] = int(raw) if types[name] in (int, "int") else float(raw)
    return out
