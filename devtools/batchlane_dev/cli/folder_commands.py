"""Folder jobs from the command line (docs/operations.md "Folder jobs").

``batchlane convert s3://bucket/path/`` submits a folder job to the API; ``batchlane convert DIR/``
first uploads a local folder into the offline stack's folder bucket (``batchlane-offline-folders``)
under ``folders/<DIR name>/``. ``jobs status|files|report``, ``retry`` and ``cancel`` take a folder
job id (``fj-…``) as well as a conversion job id.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

FOLDER_TERMINAL = ("completed", "completed_with_failures", "cancelled", "error")
EXIT_OK, EXIT_FAILED, EXIT_SOME_FAILED = 0, 1, 3


def is_folder_job(job_id: str) -> bool:
    return job_id.startswith("fj-")


def exit_code(job: dict[str, Any]) -> int:
    if job["status"] == "completed":
        return EXIT_OK
    return EXIT_SOME_FAILED if job["status"] == "completed_with_failures" else EXIT_FAILED


def describe(job: dict[str, Any]) -> str:
    f, p = job["files"], job["pages"]
    eta = f" eta {job['eta_seconds']} s" if job.get("eta_seconds") is not None else ""
    pace = f" {job['throughput_pages_per_minute']} pages/min" if job.get("throughput_pages_per_minute") else ""
    return (
        f"{job['status']:<24} files {f['completed']}/{f['discovered']} done, {f['failed']} failed, {f['skipped']} skipped, "
        f"{f['processing']} converting, {f['queued']} queued · pages {p['completed']} done, {p['failed']} failed{pace}{eta}"
    )


def watch(api: Any, job_id: str, *, interval_s: float, quiet: bool) -> dict[str, Any]:
    last = ""
    while True:
        job = api.call("GET", f"/api/v1/folder-jobs/{job_id}")
        line = describe(job)
        if not quiet and line != last:
            click.echo(line, err=True)
            last = line
        if job["status"] in FOLDER_TERMINAL and job.get("finished_at"):
            return job
        time.sleep(interval_s)


def print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job))
        return
    click.echo(f"folder job {job['id']}: {describe(job)}")
    if job.get("error"):
        click.echo(f"  error {job['error']['id']}: {job['error']['message']}")
    click.echo(f"  output   {job['output_uri']}\n  report   {job['report_uri']}\n  manifest {job['manifest_uri']}")


def folder_spec(
    uri: str,
    *,
    layout: str | None,
    output: str | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    replace: bool,
    deadline: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"input": {"folder": uri}}
    if deadline:
        spec["policy"] = {"deadline": deadline}
    if include:
        spec["input"]["include"] = list(include)
    if exclude:
        spec["input"]["exclude"] = list(exclude)
    out: dict[str, Any] = {}
    if layout:
        out["layout"] = layout
    if output:
        out["folder"] = output
    if replace:
        out["on_existing"] = "replace"
    if out:
        spec["output"] = out
    return spec


def upload_local_folder(directory: Path, *, workdir: Path, user: str) -> str:
    """Put every file of ``directory`` into ``user``'s home in the offline stack's folder bucket; answer its s3:// folder URI."""
    from batchlane_dev.local.daemon import read_state

    state = read_state(workdir.resolve())
    if not state:
        raise click.UsageError("a local folder is converted on the offline stack: start it with `batchlane local up`")
    return upload_to_offline_stack(state["env"], directory, user=user)


def offline_s3(env: dict[str, str]) -> Any:
    """An S3 client on the offline stack, with its own (dummy) credentials and endpoint."""
    import boto3

    from batchlane_dev.local.stack import REGION

    return boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=REGION,
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY"),
    )


def upload_to_offline_stack(env: dict[str, str], directory: Path, *, user: str) -> str:
    """Every file under ``directory`` into ``user``'s own folder (``users/<user>/folders/<dir>/``), same tree; its URI."""
    from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home

    s3 = offline_s3(env)
    prefix = f"{owner_home(user)}folders/{directory.resolve().name}/"
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        s3.upload_file(str(path), FOLDER_BUCKET, prefix + path.relative_to(directory).as_posix())
    return f"s3://{FOLDER_BUCKET}/{prefix}"


def convert_folder(api: Any, uri: str, spec: dict[str, Any], *, dry_run: bool, detach: bool, as_json: bool, interval: float) -> None:
    if dry_run:
        answer = api.call("POST", "/api/v1/folder-jobs?dry_run=true", spec)
        if as_json:
            click.echo(json.dumps(answer))
            return
        f, est = answer["files"], answer["estimate"]
        click.echo(f"dry run of {uri}: nothing created, nothing billed")
        click.echo(f"  files     {f['to_convert']} to convert, {f['already_processed']} already processed, {f['excluded']} excluded, by type {f['by_type']}")
        for key, error_id in f["failing"].items():
            click.echo(f"  would fail {key}: {error_id}")
        click.echo(f"  pages     {answer['pages']['total']} ({answer['pages']['method']}, {answer['pages']['files_inspected']} files inspected)")
        click.echo(f"  cost      on-demand ${est['onDemandUsd']}, batch ${est['batchUsd']}")
        click.echo(
            f"  time      on-demand ~{answer['turnaround']['onDemandSeconds']} s" + ("" if answer["listing"]["complete"] else f" ({answer['listing']['note']})")
        )
        return
    job = api.call("POST", "/api/v1/folder-jobs", spec)
    if detach:
        click.echo(json.dumps(job) if as_json else job["id"])
        return
    click.echo(f"folder job {job['id']}: {job['status']}", err=True)
    job = watch(api, job["id"], interval_s=interval, quiet=as_json)
    print_job(job, as_json)
    sys.exit(exit_code(job))


def print_files(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(answer))
        return
    if not answer["files"]:
        click.echo("no files", err=True)
    for f in answer["files"]:
        why = f" {f['error_id']}: {f['error_message']}" if f["error_id"] else ""
        pages = f" ({f['pages_failed']} of {f['pages']} pages failed)" if f["pages_failed"] else f" {f['pages']} pages"
        click.echo(f"{f['status']:<10} {f['key']}{pages} attempts {f['attempts']}{why} {' '.join(f['output_uris'])}".rstrip())
