"""`batchlane webhooks config | rotate | test URL | deliveries`: the webhook routes of the API."""

from __future__ import annotations

import json
from typing import Any

import click

from batchlane_dev.cli.jobs_commands import ApiClient, target_options


@click.group()
def webhooks() -> None:
    """Signed webhooks: your own signing secret, test deliveries, the deliveries log."""


@webhooks.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def config(api: ApiClient, as_json: bool) -> None:
    """Your signing secret: created at your first `webhooks config`, whose answer shows it (once: keep it); then its
    version and dates, and until when the deployment's signature rides beside yours."""
    answer = api.call("GET", "/api/v1/webhook-config")
    _show(answer, as_json)
    if answer.get("secret") and not as_json:
        click.echo("This is the only time the secret is shown: store it with your receiver. `batchlane webhooks rotate` makes a new one.", err=True)


@webhooks.command("rotate")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def rotate(api: ApiClient, as_json: bool) -> None:
    """A new signing secret of your own, shown once; your previous one signs beside it for the grace period.
    No other user's secret changes."""
    _show(api.call("POST", "/api/v1/webhook-config/secret", {}), as_json)


@webhooks.command("test")
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def test(api: ApiClient, url: str, as_json: bool) -> None:
    """Send a signed webhook.test delivery to URL; follow it with `batchlane webhooks deliveries`."""
    _show(api.call("POST", "/api/v1/webhook-config/test", {"url": url}), as_json)


@webhooks.command("deliveries")
@click.option("--job", "job_id", metavar="JOB", help="Only this job's deliveries.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def deliveries(api: ApiClient, job_id: str | None, as_json: bool) -> None:
    """Your deliveries, newest first: event, status, attempts, response code, latency."""
    answer = api.call("GET", "/api/v1/deliveries" + (f"?job_id={job_id}" if job_id else ""))
    if as_json:  # the answer as the API gives it (an object, like every --json), not its bare list
        click.echo(json.dumps(answer))
        return
    listed = answer["deliveries"]
    for d in listed:
        code = d["responseCode"] if d["responseCode"] is not None else "-"
        click.echo(f"{d['deliveryId']}  {d['event']:<17} {d['status']:<9} attempts {d['attempts']}  HTTP {code}  {d['latencyMs'] or 0} ms  {d['url']}")
    if not listed:
        click.echo("no deliveries", err=True)


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(data))
        return
    for key, value in data.items():
        click.echo(f"{key:<20} {'never' if value is None and key.endswith('At') else '-' if value is None else value}")
