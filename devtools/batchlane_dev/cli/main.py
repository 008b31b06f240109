"""``batchlane``: the operator's command line.

Exit codes a script can rely on: 0 success; 1 the job failed or was cancelled; 2 bad
usage or input (HTTP 400/422); 3 the job completed but some pages failed (they are
marked in the Markdown); 4 the service could not be reached (or answered 5xx); 5 no
such job or file (404, also another user's; 410: the Markdown expired); 6 the job's
state does not allow it (409: NOT_BATCH_WAITING, CONVERSION_FINISHING, NOTHING_TO_RETRY,
...); 7 not authorised (401/403); 8 the job paused for its owner's budget (a watch stops
there). Errors print
``error: <CODE>: <message>`` on stderr (docs/operations.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import click

from batchlane.domain.advice import error_object, is_input_error
from batchlane.naming import api_json

EXIT_JOB_FAILED, EXIT_USAGE, EXIT_PAGES_FAILED, EXIT_UNREACHABLE, EXIT_PAUSED = 1, 2, 3, 4, 8


EXIT_CODES_HELP = """\b
Exit codes:
  0  success (convert / jobs status --watch: the job completed)
  1  the job failed or was cancelled
  2  bad usage or input (400, 422; PDF_EMPTY, PDF_NOT_PDF before upload)
  3  the job completed but some pages failed (marked in the Markdown)
  4  the service could not be reached (offline stack not running, network, 5xx)
  5  no such job or file (404, also another user's); the Markdown expired (410)
  6  the job's state does not allow it (409: NOT_BATCH_WAITING, ...)
  7  not authorised (401, 403)
  8  the job paused for its budget (convert, jobs status --watch and demo stop watching: batchlane resume JOB)
Errors print `error: <CODE>: <message>` on stderr; with --json also one JSON object on stdout."""


class JsonErrors(click.Group):
    """A usage error (a bad option value, a missing argument) is one JSON object too when ``--json`` was asked
    for: click reports it while parsing, before any command's own error handling runs."""

    def invoke(self, ctx: click.Context) -> object:
        wants_json = "--json" in [*ctx._protected_args, *ctx.args]
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if not wants_json:
                raise
            _fail("USAGE", exc.format_message(), EXIT_USAGE, as_json=True)


@click.group(cls=JsonErrors, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(package_name="batchlane")
def main() -> None:
    """batchlane: convert large PDFs to Markdown with Claude on Amazon Bedrock.

    Jobs that can wait go through Bedrock batch inference at half price. Try
    `batchlane demo` for a full offline run, or `batchlane local up` to keep the
    offline stack running for the other commands.
    """


@main.command()
@click.option("--pages", type=click.IntRange(1, 20_000), default=1200, show_default=True, help="Pages of the generated PDF (ignored with --pdf).")
@click.option("--pdf", "pdf", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Convert this PDF instead of a generated one.")
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out"), show_default=True, help="Where the Markdown is written."
)
@click.option(
    "--faults",
    default="",
    envvar="BATCHLANE_EMULATOR_FAULTS",
    help="Emulator fault injection, e.g. job_outcome=expired,record_error_rate=0.02 (docs/offline.md).",
)
@click.option("--on-demand-only", is_flag=True, help="Turn the batch lane off for this run.")
@click.option(
    "--folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Convert this local folder as a folder job (layout alongside); outputs and report under --out/<folder name>/.",
)
@click.option("--dry-run", is_flag=True, help="With --folder: print the folder job's estimate; nothing is created.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="BATCHLANE_LOCAL_WORKDIR",
    help="With --folder: the workdir of a stack `batchlane local up` started (used when it runs; default: found as the other commands find it).",
)
@click.option("--user", envvar="BATCHLANE_LOCAL_USER", help="With --folder on a running stack: the offline identity the job belongs to (default local-user).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report as one JSON object on the last line of stdout (camelCase, amounts as decimal strings, like the API).",
)
@click.option("--verbose", is_flag=True, help="Handler logs on stderr too (they always go to --out/logs/handlers.log).")
@click.option(
    "--prepare-workers",
    type=click.IntRange(0, 8),
    default=0,
    help="Run the batch lane's prepare in this many warm worker processes (Lambda environments) instead of the stack's own process.",
)
def demo(
    pages: int,
    pdf: Path | None,
    out_dir: Path,
    faults: str,
    on_demand_only: bool,
    as_json: bool,
    folder: Path | None = None,
    dry_run: bool = False,
    workdir: Path | None = None,
    user: str | None = None,
    verbose: bool = False,
    prepare_workers: int = 0,
) -> None:
    """Run the main job end to end on the offline stack (no AWS account needed).

    Starts PostgreSQL and the emulated AWS services, converts the PDF, writes the
    Markdown under --out, prints a report and stops everything. With --folder, a folder
    job over a local folder (on the stack `batchlane local up` started, when one runs).
    """
    import os

    from rich.console import Console

    if folder is not None:
        from batchlane_dev.local.folder_demo import run_folder_demo

        result = run_folder_demo(folder, out_dir=out_dir, workdir=workdir, faults=faults, dry_run=dry_run, user=user, console=Console(stderr=True))
        if as_json:
            click.echo(json.dumps(api_json(result), default=str))
        elif dry_run:
            from batchlane_dev.cli.folder_commands import print_dry_run

            print_dry_run(result, shown_as=str(folder))
        else:
            _print_folder_report(Console(), result)
        sys.exit(0 if dry_run or result["status"] == "completed" else (EXIT_PAGES_FAILED if result["status"] == "completed_with_failures" else EXIT_JOB_FAILED))

    from batchlane_dev.local.demo import run_demo

    console = Console(stderr=True)
    try:
        report = run_demo(
            pages=pages,
            pdf=pdf,
            out_dir=out_dir,
            faults=faults,
            database_url=os.environ.get("DATABASE_URL"),
            batch_lane=not on_demand_only,
            console=console,
            verbose=verbose,
            prepare_workers=prepare_workers,
        )
    except ValueError as exc:  # e.g. an unknown fault key
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(demo_json(report), default=str))
    else:
        _print_report(console, report)
    sys.exit(_exit_code(report))


def demo_json(report: dict) -> dict:
    """The demo's report as `--json` prints it (DemoReport): the API's shape, its error one object as a job's."""
    out: dict = api_json({k: v for k, v in report.items() if k not in ("error_id", "error_message")})
    return {**out, "error": error_object(report["error_id"], report["error_message"])}


def _exit_code(report: dict) -> int:
    if report["status"] == "paused_budget":
        return EXIT_PAUSED
    if report["status"] != "completed":
        return EXIT_USAGE if report["status"] == "failed" and is_input_error(report["error_id"]) else EXIT_JOB_FAILED
    return EXIT_PAGES_FAILED if report["pages_failed"] else 0


def _batch_line(batch: dict) -> str:
    if not batch.get("records") and not batch.get("job_status"):
        return "not used" + (f" ({batch['reason']})" if batch.get("reason") else "")
    return (
        f"{batch['pages']} pages served, ${batch['cost_usd']:.4f} · {batch['records']} records: {batch['accepted']} accepted, "
        f"{batch['fallback']} fallback · Bedrock {batch['job_status'] or 'skipped'}" + (f" ({batch['reason']})" if batch.get("reason") else "")
    )


def _timings_line(timings: dict) -> str:
    parts = [f"{timings['total_s']} s in all"]
    for key, label in (("prepare_s", "prepare"), ("collect_s", "collect"), ("event_to_resume_s", "event → resume")):
        if timings.get(key) is not None:
            parts.append(f"{label} {timings[key]:.2f} s")
    return " · ".join(parts)


def _tiers_line(tiers: dict) -> str:
    """Pages per Bedrock service tier, when Flex served any (docs/architecture.md "Service tiers")."""
    if set(tiers) <= {"default"}:
        return ""
    return " (" + ", ".join(f"{name} {t['pages']} pages ${t['cost_usd']:.4f}" for name, t in tiers.items()) + ")"


def money_line(total: float, all_on_demand: float, saving_pct: float) -> str:
    """The total against all on-demand (domain/savings.py): a saving, or a loss said as one."""
    if total > all_on_demand + 5e-7:
        return f"${total:.4f} (all on-demand would be ${all_on_demand:.4f}; a LOSS of ${total - all_on_demand:.4f}, {-saving_pct}% more than on-demand)"
    return f"${total:.4f} (all on-demand would be ${all_on_demand:.4f}; saving {saving_pct}%)"


def _print_report(console, report: dict) -> None:  # type: ignore[no-untyped-def]
    from rich.table import Table

    table = Table(title=f"job {report['job_id']}", show_header=False)
    rows = [
        ("status", report["status"] + (f" ({report['error_id']}: {report['error_message']})" if report["error_id"] else "")),
        ("pages", f"{report['pages']} ({report['pages_converted']} converted, {report['pages_failed']} failed, {report['pages_blank']} blank)"),
        ("batch lane", _batch_line(report["batch"])),
        ("on-demand", f"{report['on_demand']['pages']} pages, ${report['on_demand']['cost_usd']:.4f}" + _tiers_line(report["on_demand"].get("tiers", {}))),
        ("total cost", money_line(report["total_cost_usd"], report["all_on_demand_cost_usd"], report["saving_pct"])),
        ("markdown", str(report["markdown_path"])),
        ("model", report.get("emulated_model", report["model_id"])),
        ("time", _timings_line(report["timings"])),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


def _print_folder_report(console, report: dict) -> None:  # type: ignore[no-untyped-def]
    """`demo --folder`'s report as a table, like the single-file demo's (issue 24.6)."""
    from rich.table import Table

    files, pages, batch = report["files"], report["pages"], report["batch"]
    table = Table(title=f"folder job {report['job_id']}", show_header=False)
    rows = [
        ("status", report["status"].replace("_", " ")),
        (
            "files",
            f"{files['completed']} of {files['discovered']} converted, {files['failed']} failed, {files['skipped']} skipped, {files['excluded']} left out",
        ),
        ("pages", f"{pages['total']} ({pages['completed']} converted, {pages['failed']} failed)"),
        ("batch lane", f"{batch['records']} records in {batch['bedrock_jobs']} Bedrock job(s), {batch['accepted']} accepted"),
        ("total cost", money_line(report["total_cost_usd"], report["all_on_demand_cost_usd"], report["saving_pct"])),
        ("markdown", report["output_dir"]),
        ("report", report["report_path"]),
        ("time", f"{report['seconds']} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


@main.group()
def db() -> None:
    """Database commands (DATABASE_ADMIN_URL, else DATABASE_URL, selects the server and the owner)."""


@db.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="BATCHLANE_LOCAL_WORKDIR",
    help="Without a database in the environment: the offline stack's workdir (default: found as the other commands find it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the migrations applied (none: up to date).")
def migrate(workdir: Path | None, as_json: bool) -> None:
    """Apply the SQL migrations in order; running it again applies nothing.

    With no database in the environment, the offline stack's (`batchlane local up`), found from any directory."""
    import os

    from batchlane.db.migrate import migrate as apply
    from batchlane.runtime import admin_database

    if not any(os.environ.get(k) for k in ("DATABASE_URL", "DATABASE_ADMIN_URL", "DATABASE_SECRET_ARN")):
        from batchlane_dev.local.daemon import use_running_stack

        try:
            use_running_stack(workdir)
        except RuntimeError as exc:
            _fail("UNREACHABLE", f"{exc}; or set DATABASE_URL", EXIT_UNREACHABLE, as_json=as_json)
    applied = apply(admin_database())  # the owner's: batchlane_app may not change the schema
    if as_json:
        click.echo(json.dumps({"applied": list(applied)}))
    else:
        click.echo(f"applied: {', '.join(applied)}" if applied else "database is up to date")


@main.group()
def local() -> None:
    """The offline stack: PostgreSQL + emulated S3 / Step Functions / EventBridge / Bedrock on 127.0.0.1."""


def _shown(key: str, value: str) -> str:
    """A value for a terminal: a database URL without its password (terminals are logged and shared).
    A server on a Unix socket has no host in the URL (``?host=/dir``): nothing stands before the path then."""
    if not key.startswith("DATABASE_URL"):
        return value
    parts = urlsplit(value)
    if parts.password is None:
        return value
    netloc = f"{parts.username}:***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


_WORKDIR_HELP = "Where the stack keeps its database and state (default ./.batchlane/local; without it, a stack started elsewhere is found too)."
_SHOWN_ENV = ("BATCHLANE_API_URL", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK", "DATABASE_URL")


def stack_json(state: dict | None, workdir: Path, *, started: bool | None = None, notice: str | None = None) -> dict:
    """`local up|status --json`: one object (LocalStack in docs/api/openapi.yaml); ``env`` is what a client of the
    stack needs, the database password included (the state file is readable by its user only, and so is this)."""
    env = (state or {}).get("env", {})
    out = {
        "running": bool(state),
        "pid": (state or {}).get("pid"),
        "startedAt": (state or {}).get("started_at"),
        "workdir": str(workdir),
        "stateFile": str(workdir / "state.json"),
        "apiUrl": env.get("BATCHLANE_API_URL"),
        "consoleUrl": env.get("BATCHLANE_CONSOLE_URL"),
        "env": dict(env),
    }
    if started is not None:
        out["started"] = started
    if notice is not None:
        out["notice"] = notice
    return out


@local.command()
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), envvar="BATCHLANE_LOCAL_WORKDIR", help=_WORKDIR_HELP)
@click.option("--faults", default="", envvar="BATCHLANE_EMULATOR_FAULTS", help="Emulator fault injection (docs/offline.md).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: running, started, pid, apiUrl, consoleUrl, env (with the database password).")
def up(workdir: Path | None, faults: str, as_json: bool) -> None:
    """Start the offline stack in the background and print how to reach it (one that runs already is reused)."""
    from batchlane_dev.local.daemon import DEFAULT_WORKDIR, find_stack, restart_notice, start_daemon

    running, found, _ = find_stack(workdir)
    if running:
        state, target, started = running, found, False
    else:
        target = (workdir or DEFAULT_WORKDIR).resolve()
        try:
            state, started = start_daemon(target, faults=faults), True
        except RuntimeError as exc:
            _fail("UNREACHABLE", str(exc), EXIT_UNREACHABLE, as_json=as_json)
    if as_json:
        click.echo(json.dumps(stack_json(state, target, started=started, notice=restart_notice(state))))
        return
    state_file = target / "state.json"
    if started:
        click.echo(f"offline stack up (pid {state['pid']}); state in {state_file}")
    else:
        click.echo(f"offline stack already running (pid {state['pid']}); state in {state_file}")
    click.echo(restart_notice(state))
    click.echo(f"  console: {state['env'].get('BATCHLANE_CONSOLE_URL')} (sign in with any user name)")
    for key in _SHOWN_ENV:
        click.echo(f"  {key}={_shown(key, state['env'][key])}")
    click.echo(f"  (the database password: {state_file}, or `batchlane local status --json`)")
    click.echo("  `batchlane local down` stops it and wipes its jobs and stored files (the emulated services keep nothing)")


def _fail(code: str, message: str, exit_code: int, *, as_json: bool) -> NoReturn:
    from batchlane_dev.cli.jobs_commands import fail

    fail(code, message, exit_code, as_json=as_json)


def count_jobs(state: dict) -> int | None:
    """Single-file and folder jobs in the running stack's database (None: it cannot be asked)."""
    from batchlane.db.connection import Database, connect_params_from_url

    try:
        database = Database(connect_params_from_url(state["env"]["DATABASE_URL"]))
        try:
            row = database.one("SELECT (SELECT count(*) FROM large_conversion_jobs) + (SELECT count(*) FROM folder_jobs) AS n")
        finally:
            database.close()
    except Exception:  # a count for a message; the stop goes ahead without it
        return None
    return int(row["n"]) if row else None


@local.command()
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), envvar="BATCHLANE_LOCAL_WORKDIR", help=_WORKDIR_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: stopped, pid, workdir, jobsWiped.")
def down(workdir: Path | None, as_json: bool) -> None:
    """Stop the offline stack started by `batchlane local up`, wiping its jobs and stored files.

    The emulated S3, Step Functions and Bedrock keep nothing in memory across a stop, so the next
    `local up` starts from empty tables: download any Markdown you want to keep first
    (`batchlane jobs download JOB`)."""
    from batchlane_dev.local.daemon import find_stack, stop_daemon

    running, found, looked = find_stack(workdir)
    jobs = count_jobs(running) if running else None
    stopped = bool(running) and stop_daemon(found)
    if as_json:
        click.echo(json.dumps({"stopped": stopped, "pid": (running or {}).get("pid"), "workdir": str(found), "jobsWiped": jobs if stopped else 0}))
        return
    if not stopped:
        click.echo(f"not running (looked at {', '.join(map(str, looked))})")
        return
    wiped = "its jobs" if jobs is None else f"its {jobs} job(s)"
    click.echo(f"stopped (pid {(running or {}).get('pid')}, {found}); {wiped} and stored files are gone: the next `batchlane local up` starts empty")


@local.command()
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), envvar="BATCHLANE_LOCAL_WORKDIR", help=_WORKDIR_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object: running, pid, apiUrl, consoleUrl, env.")
def status(workdir: Path | None, as_json: bool) -> None:
    """Say whether the offline stack is running, and where (or where it looked); the web console: consoleUrl."""
    from batchlane_dev.local.daemon import find_stack

    state, found, looked = find_stack(workdir)
    if as_json:
        click.echo(json.dumps(stack_json(state, found)))
        sys.exit(0 if state else 1)
    if not state:
        click.echo(f"not running (looked at {', '.join(map(str, looked))})")
        sys.exit(1)
    click.echo(f"running (pid {state['pid']}) since {state['started_at']}; state in {found / 'state.json'}")
    click.echo(f"  console: {state['env'].get('BATCHLANE_CONSOLE_URL')}")
    for key, value in sorted(state["env"].items()):
        if key.startswith(("AWS_ENDPOINT", "DATABASE_URL", "BATCH_CONVERSION_ENABLED")):
            click.echo(f"  {key}={_shown(key, value)}")


from batchlane_dev.cli.jobs_commands import COMMANDS  # noqa: E402 - registered after the group exists

for _command in COMMANDS:
    main.add_command(_command)

from batchlane_dev.cli.doctor import doctor  # noqa: E402

main.add_command(doctor)

from batchlane_dev.cli.webhooks_commands import webhooks  # noqa: E402

main.add_command(webhooks)

from batchlane_dev.cli.simulate_command import simulate_command  # noqa: E402

main.add_command(simulate_command, name="simulate")

if __name__ == "__main__":
    main()
