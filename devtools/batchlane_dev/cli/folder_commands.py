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

from batchlane.domain.advice import is_input_error
from batchlane.domain.file_types import by_extension

FOLDER_TERMINAL = ("completed", "completed_with_failures", "cancelled", "error")
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SOME_FAILED = 0, 1, 2, 3


def is_folder_job(job_id: str) -> bool:
    return job_id.startswith("fj-")


def exit_code(job: dict[str, Any]) -> int:
    """0 completed; 3 some files failed; 2 the folder itself is the user's input error (FOLDER_EMPTY, FOLDER_NO_PDF); 1 otherwise."""
    if job["status"] == "completed":
        return EXIT_OK
    if job["status"] == "error" and is_input_error((job.get("error") or {}).get("code")):
        return EXIT_USAGE
    return EXIT_SOME_FAILED if job["status"] == "completed_with_failures" else EXIT_FAILED


def describe(job: dict[str, Any]) -> str:
    f, p = job["files"], job["pages"]
    eta = f" eta {job['etaSeconds']} s" if job.get("etaSeconds") is not None else ""
    pace = f" {job['throughputPagesPerMinute']} pages/min" if job.get("throughputPagesPerMinute") else ""
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
        if job["status"] in FOLDER_TERMINAL and job.get("finishedAt"):
            return job
        time.sleep(interval_s)


def print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job))
        return
    click.echo(f"folder job {job['id']}: {describe(job)}")
    if job.get("error"):
        click.echo(f"  error    {job['error']['code']}: {job['error']['message']}")
        click.echo(f"  next     {job['error']['nextStep']}")
    click.echo(f"  output   {job['outputUri']}\n  report   {job['reportUri']}\n  manifest {job['manifestUri']}")
    if job.get("localOutput"):
        click.echo(
            f"  on disk  {job['localOutput']['folder']} ({job['localOutput']['markdownFiles']} Markdown files; report {job['localOutput']['reportPath']})"
        )


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
        out["onExisting"] = "replace"
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


def local_targets(directory: Path, target: Path) -> list[Path]:
    """Where a local folder's Markdown lands: ``target`` (the folder itself, or ``-o DIR``), same tree, ``doc.pdf`` (or
    any type batchlane converts: ``doc.docx``, ``scan.tiff``) → ``doc.md``."""
    return [target / p.relative_to(directory).with_suffix(".md") for p in sorted(directory.rglob("*")) if p.is_file() and by_extension(p.name) is not None]


def check_local_targets(directory: Path, target: Path, *, force: bool) -> None:
    """Refuse, before anything is uploaded, to overwrite Markdown already on the disk (unless --force)."""
    if target.exists() and not target.is_dir():
        raise click.UsageError(f"{target} is not a folder; -o names a folder for a folder job")
    existing = [p for p in local_targets(directory, target) if p.exists()]
    if existing and not force:
        shown = ", ".join(map(str, existing[:3])) + (f" and {len(existing) - 3} more" if len(existing) > 3 else "")
        raise click.UsageError(f"{shown} exist(s); pass --force to overwrite, or choose another folder with -o")


def download_outputs(env: dict[str, str], job: dict[str, Any], target: Path) -> dict[str, Any]:
    """The folder job's Markdown, what goes beside each (``doc.pages.jsonl``, the figures under ``doc.images/``) and
    its record (``_batchlane/<job>/``: report, manifest) from the offline bucket to ``target``, the tree the bucket has
    under the job's output folder. The PDFs stay where they are."""
    bucket, _, prefix = str(job["outputUri"]).removeprefix("s3://").partition("/")
    s3 = offline_s3(env)
    record = f"_batchlane/{job['id']}/"
    written = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) :]
            beside = relative.endswith(".pages.jsonl") or ".images/" in relative
            if not (relative.lower().endswith((".md", ".converted.docx", ".converted.html", ".blocks.jsonl")) or beside or relative.startswith(record)):
                continue
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, item["Key"], str(path))
            written += relative.lower().endswith(".md")
    return {
        "folder": str(target),
        "markdownFiles": written,
        "reportPath": str(target / record / "report.jsonl"),
        "manifestPath": str(target / record / "manifest.json"),
    }


def convert_folder(
    api: Any,
    uri: str,
    spec: dict[str, Any],
    *,
    dry_run: bool,
    detach: bool,
    as_json: bool,
    interval: float,
    local_target: Path | None = None,
    shown_as: str | None = None,
) -> None:
    """``local_target``: a local folder's results come back there (next to its PDFs, or under ``-o DIR``)."""
    if dry_run:
        answer = api.estimate("/api/v1/folder-jobs?dry_run=true", spec, quiet=as_json)
        if as_json:
            click.echo(json.dumps(answer))
            return
        print_dry_run(answer, shown_as=shown_as or uri, uploaded_under=uri.split("/", 3)[3] if shown_as else "")
        return
    job = api.call("POST", "/api/v1/folder-jobs", spec)
    if detach:
        click.echo(json.dumps(job) if as_json else job["id"])
        return
    click.echo(f"folder job {job['id']}: {job['status']}", err=True)
    job = watch(api, job["id"], interval_s=interval, quiet=as_json)
    if local_target is not None:
        from batchlane_dev.local.daemon import read_state

        state = read_state(api.workdir) if api.workdir else None
        if state:
            job = {**job, "localOutput": download_outputs(state["env"], job, local_target)}
            written = job["localOutput"]
            click.echo(f"{written['markdownFiles']} Markdown file(s) written under {written['folder']}; report {written['reportPath']}", err=True)
        else:
            click.echo(f"the results stay in {job['outputUri']}: no offline stack workdir to fetch them from (--workdir)", err=True)
    print_job(job, as_json)
    if job.get("error"):
        click.echo(f"error: {job['error']['code']}: {job['error']['message']}", err=True)
    sys.exit(exit_code(job))


def print_dry_run(answer: dict[str, Any], *, shown_as: str, uploaded_under: str = "") -> None:
    """A folder's estimate for a person: the user's own folder, counts in words, the lane and why, a turnaround
    that matches the lane, and every file that will fail."""
    f, est, lane, turnaround = answer["files"], answer["estimate"], answer.get("lane") or {}, answer["turnaround"]
    click.echo(f"dry run of {shown_as}: nothing created, nothing billed")
    types = ", ".join(f"{n} {kind}" for kind, n in f["byType"].items()) or "none"
    click.echo(f"  files     {f['toConvert']} to convert, {f['alreadyProcessed']} already converted, {f['excluded']} left out (by type: {types})")
    click.echo(f"  pages     {answer['pages']['total']} ({answer['pages']['method']}, {answer['pages']['filesInspected']} file(s) inspected)")
    for kind, part in (f.get("estimateByType") or {}).items():  # issue 43: each type estimated on its own
        pages = "no model call" if part["pages"] is None else f"{part['pages']} page(s)"
        click.echo(f"    {kind:<6} {part['files']} file(s), {pages}: on-demand ${part['onDemandUsd']}, batch ${part['batchUsd']}")
    if lane:
        click.echo(f"  lane      {lane['name'].replace('_', '-')}: {lane['reason']}")
    click.echo(f"  cost      on-demand ${est['onDemandUsd']}, batch ${est['batchUsd']}")
    if lane.get("name") == "batch" and turnaround.get("batchUpToHours"):
        time_line = f"up to {turnaround['batchUpToHours']} h (a Bedrock batch job; usually much less); ~{turnaround['onDemandSeconds']} s if the pool sends them on-demand"
    else:
        time_line = f"~{turnaround['onDemandSeconds']} s on-demand"
    click.echo(f"  time      {time_line}" + ("" if answer["listing"]["complete"] else f" ({answer['listing']['note']})"))
    failing = f["failing"]
    if failing:
        click.echo(f"  will fail {len(failing)} file(s):")
        for key, error_id in failing.items():
            click.echo(f"    {shown_as.rstrip('/') + '/' + key.removeprefix(uploaded_under) if uploaded_under else key}: {error_id}")


def print_files(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(answer))
        return
    if not answer["files"]:
        click.echo("no files", err=True)
    for f in answer["files"]:
        why = f" {f['error']['code']}: {f['error']['message']}" if f["error"] else ""
        pages = f" ({f['pagesFailed']} of {f['pages']} pages failed)" if f["pagesFailed"] else f" {f['pages']} pages"
        click.echo(f"{f['status']:<10} {f['key']}{pages} attempts {f['attempts']}{why} {' '.join(f['outputUris'])}".rstrip())
