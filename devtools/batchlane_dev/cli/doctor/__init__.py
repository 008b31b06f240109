"""`batchlane doctor [--stack-name NAME] [--live] [--json]`: the preflight after `cdk deploy`.

Without ``--stack-name`` it checks the offline stack of ``--workdir`` (`batchlane local
up`), whose state file carries the same outputs a deployed stack has. Exit 0 when every
check passed, 1 when any failed or warned (one ``problem:`` line each on stderr), 4 when
the offline stack is not running. docs/deploy.md says what each check means.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from batchlane_dev.cli.doctor.page_forms import PAGE_FORMS_CHECK
from batchlane_dev.cli.doctor.quality import QUALITY_CHECK
from batchlane_dev.cli.doctor.results import Check, failed
from batchlane_dev.cli.doctor.service_tiers import SERVICE_TIERS_CHECK
from batchlane_dev.cli.jobs_commands import EXIT_UNREACHABLE

EXIT_PROBLEMS = 1


@click.command()
@click.option("--stack-name", envvar="BATCHLANE_STACK_NAME", help="The deployed CloudFormation stack (default: the offline stack of --workdir).")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="BATCHLANE_LOCAL_WORKDIR",
    help="The offline stack's workdir (default: ./.batchlane/local, else the one `batchlane local up` recorded for you).",
)
@click.option(
    "--live", is_flag=True, help="Also make one on-demand call and run a pilot batch job of the minimum record count (billed on AWS, typically under $1)."
)
@click.option(
    "--quality",
    is_flag=True,
    help="With --live: convert a small bundled sample of pages with known facts through both lanes and print the pass rate per fact kind and the cost "
    "(offline: the emulator's score, not Claude's).",
)
@click.option(
    "--pilot-timeout", "pilot_timeout_min", type=click.FloatRange(min=0.1), default=120.0, show_default=True, help="Minutes to wait for the pilot job."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with every check {name, ok, detail, severity}.")
def doctor(stack_name: str | None, workdir: Path | None, live: bool, quality: bool, pilot_timeout_min: float, as_json: bool) -> None:
    """Check a deployment: credentials, region, model access, role, bucket, events rule, database, quotas."""
    if quality and not live:
        raise click.UsageError("--quality needs --live: it calls the model on your account")
    import boto3
    from botocore.config import Config

    from batchlane_dev.cli.doctor.run import run_doctor
    from batchlane_dev.cli.doctor.target import StackNotFound, Target, from_cloudformation, from_offline_state

    target: Target
    if stack_name:
        session = boto3.session.Session()
        try:
            target = from_cloudformation(session.client("cloudformation"), stack_name)
        except StackNotFound as exc:
            _finish([failed("stack outputs", str(exc))], stack_name, as_json)
            return
        except Exception as exc:  # no credentials or no region
            _finish([failed("stack outputs", f"cannot read stack {stack_name!r}: {exc}")], stack_name, as_json)
            return
    else:
        from batchlane_dev.local.daemon import use_running_stack

        try:
            state = use_running_stack(workdir)
        except RuntimeError as exc:
            click.echo(f"error: UNREACHABLE: {exc}", err=True)
            sys.exit(EXIT_UNREACHABLE)
        target = from_offline_state(state)
        session = boto3.session.Session()
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10, read_timeout=600)
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = session.client(service, config=config)  # type: ignore[call-overload]
        return clients[service]

    results = run_doctor(
        target, client, region=session.region_name, live=live, quality=quality, pilot_timeout_s=pilot_timeout_min * 60, poll_s=0.2 if target.offline else 30.0
    )
    _finish(results, target.name, as_json)


def _finish(results: list[Check], target_name: str, as_json: bool) -> None:
    problems = [r for r in results if not r.ok]
    if as_json:
        report: dict[str, Any] = {"target": target_name, "ok": not problems, "checks": [r.to_json() for r in results]}
        report.update(
            {key: value for r in results if r.name in (PAGE_FORMS_CHECK, SERVICE_TIERS_CHECK, QUALITY_CHECK) for key, value in r.data.items()}
        )  # pageForms, serviceTiers, quality
        click.echo(json.dumps(report))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"batchlane doctor: {target_name}", show_header=False)
        table.add_column("", no_wrap=True)
        table.add_column("check", overflow="fold")
        table.add_column("detail", overflow="fold")  # a model id or rule name is folded onto the next line, never cut
        for result in results:
            mark = "[green]ok[/]" if result.ok else ("[yellow]warn[/]" if result.severity == "warning" else "[red]FAIL[/]")
            table.add_row(mark, result.name, result.detail)
        # Piped or captured (not a terminal): as wide as the longest row, so a script or a log keeps every name whole.
        widest = max((len(r.name) for r in results), default=0) + max((len(r.detail) for r in results), default=0)
        wide = None if sys.stdout.isatty() else max(80, widest + 16)  # the two columns' widest cells, the mark and the borders
        Console(width=wide).print(table)
    for problem in problems:
        click.echo(f"problem: {problem.name}: {problem.detail}", err=True)
    sys.exit(EXIT_PROBLEMS if problems else 0)
