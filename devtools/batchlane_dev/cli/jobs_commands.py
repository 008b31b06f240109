"""`batchlane convert | jobs list | jobs status | jobs download | jobs pages | retry | cancel | process-now`: the API, from a terminal.

Targets, output and exit codes: docs/module-notes.md "batchlane_dev.cli.jobs_commands".
"""

from __future__ import annotations

import functools
import json
import os
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import click
import urllib3

from batchlane.api.results import rendering_name
from batchlane.domain.advice import is_input_error
from batchlane.domain.file_types import by_extension, content_type_for, identify, is_zip
from batchlane_dev.cli import folder_commands

EXIT_OK, EXIT_JOB_FAILED, EXIT_USAGE, EXIT_PAGES_FAILED, EXIT_UNREACHABLE, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNAUTHORIZED = 0, 1, 2, 3, 4, 5, 6, 7
EXIT_PAUSED = 8  # issue 38.5: the job paused for its owner's budget; a watch stops there (never waits for ever)
TERMINAL = ("completed", "failed", "cancelled")
PAUSED = "paused_budget"  # a watch ends here too: the job waits for its owner (docs/operations.md "Estimates, holds, savings and pauses")


def paused_line(job: dict[str, Any]) -> str:
    """One line for a job paused for its owner's budget: why (what it could not send, who holds the rest), and how to resume it."""
    why = (job.get("error") or {}).get("message") or "its next request does not fit this month's budget"
    return f"job {job['jobId']} paused: {why.removeprefix('Paused: ')} (exit {EXIT_PAUSED}; resume it with: batchlane resume {job['jobId']})"


JOB_STATUSES = ("splitting", "pending", "waiting_batch", "processing", "paused_budget", "assembling", "completed", "failed", "cancelled")
DEFAULT_WORKDIR = Path(".batchlane/local")
DEFAULT_LOCAL_USER = "local-user"
# The offline default user is the operator trying the stack: a member of the priority group, so the
# documented `batchlane process-now JOB` works as written. `--user NAME` (or BATCHLANE_LOCAL_USER) is a
# plain user; `--user 'NAME;groups=a,b'` names its groups (docs/operations.md "The CLI").
DEFAULT_LOCAL_GROUPS = ("batchlane-priority",)


class ApiFailure(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message

    @property
    def exit_code(self) -> int:
        if self.status in (401, 403):
            return EXIT_UNAUTHORIZED
        if self.status in (404, 410):  # 410: the Markdown expired with the bucket's lifecycle
            return EXIT_NOT_FOUND
        if self.status == 409:
            return EXIT_CONFLICT
        if 400 <= self.status < 500:
            return EXIT_USAGE
        return EXIT_UNREACHABLE


class Unreachable(Exception):
    pass


RATE_LIMIT_RETRIES = 5  # a 429 RATE_LIMITED is waited out (Retry-After, at most 30 s) this many times
THROTTLE_RETRIES = 8  # a throttle answered by API Gateway itself is retried this many times, backing off
THROTTLE_BACKOFF_S = (0.5, 8.0)  # the first wait and the longest one (doubling, full jitter)
# API Gateway's answer when Lambda rejected the invocation (a throttle: the function never ran), AWS Lambda
# Developer Guide, "Handling Lambda errors with an API Gateway API": 500 with this body (API Gateway's default), or
# with the stack's DEFAULT_5XX gateway response (infra/api.py), code GATEWAY_ERROR; never an error code of the function.
GATEWAY_REJECTED = {"message": "Internal server error"}
GATEWAY_ERROR = "GATEWAY_ERROR"


def gateway_rejected(status: int, payload: Any) -> bool:
    error = payload.get("error") if isinstance(payload, dict) else None
    return status == 500 and (payload == GATEWAY_REJECTED or (isinstance(error, dict) and error.get("code") == GATEWAY_ERROR))


def progress_words(progress: dict[str, Any]) -> str:
    """An estimate's progress for a person: ``counting 3/24``, ``listing 2000 objects``, ``reading``."""
    step, done, total = progress.get("step") or "waiting for a worker", progress.get("done"), progress.get("total")
    if step == "listing":
        return f"listing ({done or 0} objects so far)"
    return f"{step} {done}/{total}" if total and step != "reading" else str(step)


def retry_wait(status: int, retry_after: str | None, payload: Any, attempt: int) -> float | None:
    """Seconds to wait before sending a refused request again, or None when it is not retried
    (``retry_after``: the answer's ``Retry-After`` header, if any).

    * 429 with ``Retry-After`` (the API's per-user rate limit, ``RATE_LIMITED``): as it says, at most 30 s,
      ``RATE_LIMIT_RETRIES`` times.
    * A throttle on the way to the function, answered by API Gateway itself: 429 without ``Retry-After``
      (the stage's throttle), 503, or 500 ``{"message": "Internal server error"}`` (Lambda rejected the
      invocation: the account's or the function's concurrency was full). The function never ran, so a POST
      is as safe to send again as a GET; backing off (0.5 s doubling to 8 s, full jitter, ``Retry-After``
      when there is one), ``THROTTLE_RETRIES`` times. A 502 (the function ran and failed) is not retried.
    """
    after = retry_after
    if status == 429 and after:
        if attempt >= RATE_LIMIT_RETRIES:
            return None
        try:
            return min(30.0, max(0.0, float(after)))
        except ValueError:
            return None
    rejected = gateway_rejected(status, payload)
    if not (status in (429, 503) or rejected) or attempt >= THROTTLE_RETRIES:
        return None
    if after:
        try:
            return min(30.0, max(0.0, float(after)))
        except ValueError:
            pass
    first, longest = THROTTLE_BACKOFF_S
    return random.uniform(0, min(longest, first * 2**attempt))  # jitter, not a secret


def failure_of(status: int, payload: Any, reason: str) -> ApiFailure:
    """An error answer's ``{"error": {"code", "message"}}`` (decision 0031); anything else (a proxy's page) by its HTTP status."""
    error = payload.get("error") if isinstance(payload, dict) else None
    error = error if isinstance(error, dict) else {}
    return ApiFailure(status, str(error.get("code") or f"HTTP_{status}"), str(error.get("message") or reason))


def _retry_wait(exc: BaseException, attempt: int) -> tuple[float | None, ApiFailure | None]:
    """For an error answer: how long to wait before sending the request again (None: not again), and the failure it is."""
    if not isinstance(exc, urllib.error.HTTPError):
        return None, None
    try:
        payload = json.loads(exc.read() or b"{}")
    except ValueError:
        payload = {}
    failure = failure_of(exc.code, payload, exc.reason)
    return retry_wait(exc.code, exc.headers.get("Retry-After") if exc.headers else None, payload, attempt), failure


def post_upload(upload: dict[str, Any], data: bytes, *, filename: str = "upload.pdf", timeout_s: float = 600) -> int:
    """Send ``data`` to a registered file's presigned POST (``{"url", "fields"}``) as multipart/form-data:
    the policy fields first, the file last, as S3 requires. Returns the HTTP status (204 from S3)."""
    url = str(upload["url"])
    if not url.startswith(("http://", "https://")):
        raise ApiFailure(400, "UPLOAD_FAILED", f"the upload URL is not http(s): {url}")
    fields: list[tuple[str, Any]] = list(upload["fields"].items())
    fields.append(("file", (filename, data, content_type_for(filename))))
    body, content_type = urllib3.encode_multipart_formdata(fields)  # urllib3: botocore's own HTTP library
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})  # noqa: S310 - checked above
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        raise ApiFailure(exc.code, "UPLOAD_FAILED", f"the upload was refused ({exc.code} {exc.reason})") from None
    except (urllib.error.URLError, OSError) as exc:
        raise Unreachable(f"cannot upload: {getattr(exc, 'reason', exc)}") from None


@dataclass(frozen=True)
class ApiClient:
    base_url: str
    token: str
    timeout_s: float = 60.0
    workdir: Path | None = None  # the offline stack's, when that is the target (a local folder is uploaded there)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise click.UsageError(f"the API URL must be http(s): {self.base_url}")

    def local_user(self) -> str:
        """The offline identity of a ``local:<user>[;groups=...]`` token (whose home a local folder is uploaded to)."""
        if not self.token.startswith("local:"):
            raise click.UsageError("a local folder is converted on the offline stack: use --user, not a Cognito token")
        return self.token.removeprefix("local:").partition(";")[0]

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = self.base_url.rstrip("/") + path
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        attempt = 0
        while True:
            request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - http(s) checked above
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                    return dict(json.loads(response.read() or b"{}"))
            except (urllib.error.URLError, OSError) as exc:
                wait_s, failure = _retry_wait(exc, attempt)
                if wait_s is None:
                    raise (failure or self._failure(exc)) from None
                time.sleep(wait_s)  # a rate limit (its Retry-After) or a throttle (backing off): retry_wait
                attempt += 1

    def estimate(self, path: str, body: dict[str, Any], *, quiet: bool = False, interval_s: float = 0.5, timeout_s: float = 1800) -> dict[str, Any]:
        """A dry run: POST it (202, an estimate), then poll ``GET /api/v1/estimates/{id}`` until it is answered, its
        progress on stderr unless ``quiet``. The dry run's answer, or :class:`ApiFailure` with the id it failed with
        (PDF_CORRUPT and the like as a 400, exit 2, as convert would refuse the file; the estimate's own ends as a 503)."""
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        estimate = self.call("POST", path, body)
        deadline = time.monotonic() + timeout_s
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True), disable=quiet, transient=True) as bar:
            task = bar.add_task("estimate: started")
            while estimate["status"] == "running":
                if time.monotonic() > deadline:
                    raise ApiFailure(504, "ESTIMATE_TIMEOUT", f"the estimate {estimate['estimateId']} did not finish within {timeout_s:.0f} s")
                bar.update(task, description=f"estimate: {progress_words(estimate.get('progress') or {})}")
                time.sleep(interval_s)
                estimate = self.call("GET", estimate["poll"])
        if estimate["status"] == "completed":
            return dict(estimate["result"])
        error = estimate.get("error") or {}
        code = str(error.get("code") or "ESTIMATE_FAILED")
        raise ApiFailure(503 if code.startswith("ESTIMATE_") else 400, code, str(error.get("message") or "the estimate failed"))

    def upload(self, upload: dict[str, Any], data: bytes, *, filename: str = "upload.pdf") -> None:
        """POST the PDF to the presigned POST the API answered (its policy fields, then the file)."""
        post_upload(upload, data, filename=filename, timeout_s=max(self.timeout_s, 600))

    def download(self, url: str, target: Path, *, force: bool) -> int:
        """Stream a presigned GET to ``target``; without ``force`` an existing file is never replaced."""
        if not url.startswith(("http://", "https://")):
            raise ApiFailure(502, "DOWNLOAD_FAILED", f"the download URL is not http(s): {url}")
        partial = target.with_name(f".{target.name}.part")
        try:
            with urllib.request.urlopen(url, timeout=max(self.timeout_s, 600)) as response, partial.open("wb") as out:  # noqa: S310 - checked above
                size = 0
                while block := response.read(1 << 20):
                    out.write(block)
                    size += len(block)
        except urllib.error.HTTPError as exc:
            partial.unlink(missing_ok=True)
            raise ApiFailure(exc.code, "DOWNLOAD_FAILED", f"the download was refused ({exc.code} {exc.reason})") from None
        except (urllib.error.URLError, OSError) as exc:
            partial.unlink(missing_ok=True)
            raise Unreachable(f"cannot download: {getattr(exc, 'reason', exc)}") from None
        if force:
            os.replace(partial, target)
        else:
            try:
                os.link(partial, target)  # fails if target appeared meanwhile: never overwrite without --force
            except FileExistsError:
                raise click.UsageError(f"{target} exists; pass --force to overwrite it") from None
            finally:
                partial.unlink(missing_ok=True)
        return size

    def text(self, path: str) -> str:
        """GET a non-JSON body (a folder job's report.jsonl)."""
        return self.text_page(path)[0]

    def text_page(self, path: str) -> tuple[str, dict[str, str]]:
        """GET a non-JSON body and the answer's headers (a page of a folder job's report.jsonl)."""
        request = urllib.request.Request(self.base_url.rstrip("/") + path, headers={"Authorization": f"Bearer {self.token}"})  # noqa: S310 - checked
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                return str(response.read().decode()), dict(response.headers)
        except (urllib.error.URLError, OSError) as exc:
            raise self._failure(exc) from None

    def _failure(self, exc: urllib.error.URLError | OSError) -> Exception:
        """An error answer as ApiFailure (its stable code and message); no answer at all as Unreachable."""
        if isinstance(exc, urllib.error.HTTPError):
            try:
                payload = json.loads(exc.read() or b"{}")
            except ValueError:
                payload = {}
            return failure_of(exc.code, payload, exc.reason)
        return Unreachable(f"cannot reach the API at {self.base_url}: {getattr(exc, 'reason', exc)}")

    # -- the few calls the commands make -------------------------------------------------
    def job(self, job_id: str) -> dict[str, Any]:
        return self.call("GET", f"/api/v1/jobs/{job_id}")


def _stack_api_url(stack_name: str) -> str:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = boto3.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        raise Unreachable(f"cannot read the outputs of stack {stack_name}: {exc}") from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    if "ApiUrl" not in outputs:
        raise Unreachable(f"stack {stack_name} has no ApiUrl output")
    return outputs["ApiUrl"]


def local_identity(user: str | None) -> str:
    """The offline token's body for ``--user`` (None: the default user, with the priority group)."""
    if user is None:
        return f"{DEFAULT_LOCAL_USER};groups={','.join(DEFAULT_LOCAL_GROUPS)}"
    return user


def resolve_client(*, stack_name: str | None, api_url: str | None, workdir: Path | None, user: str | None) -> ApiClient:
    token = os.environ.get("BATCHLANE_ID_TOKEN")
    user = local_identity(user)
    if stack_name:
        if not token:
            raise click.UsageError("set BATCHLANE_ID_TOKEN to a Cognito ID token to call a deployed stack (docs/operations.md)")
        return ApiClient(_stack_api_url(stack_name), token)
    if api_url:
        return ApiClient(api_url, token or f"local:{user}")
    from batchlane_dev.local.daemon import find_stack, not_running_message

    state, found, looked = find_stack(workdir)
    if not state:
        raise Unreachable(not_running_message(looked) + " (or pass --stack-name)")
    return ApiClient(state["env"]["BATCHLANE_API_URL"], f"local:{user}", workdir=found)


def fail(code: str, message: str, exit_code: int, *, as_json: bool) -> NoReturn:
    """The one way a command fails: ``error: CODE: message`` on stderr, and with --json one JSON object on stdout."""
    click.echo(f"error: {code}: {message}", err=True)
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}, "exitCode": exit_code}))
    sys.exit(exit_code)


def target_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--stack-name / --api-url / --workdir / --user, resolved into an ApiClient passed as ``api``."""

    @click.option("--stack-name", envvar="BATCHLANE_STACK_NAME", help="A deployed stack: its ApiUrl output, with the token in BATCHLANE_ID_TOKEN.")
    @click.option("--api-url", envvar="BATCHLANE_API_URL", help="Call this API base URL directly.")
    @click.option(
        "--workdir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="BATCHLANE_LOCAL_WORKDIR",
        help="Offline stack workdir (default: ./.batchlane/local, else the running stack `batchlane local up` recorded for you).",
    )
    @click.option(
        "--user",
        envvar="BATCHLANE_LOCAL_USER",
        help="Offline identity, the owner of the files (default: local-user, a member of batchlane-priority); 'NAME;groups=a,b' adds groups.",
    )
    @functools.wraps(fn)
    def wrapper(stack_name: str | None, api_url: str | None, workdir: Path | None, user: str | None, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            api = resolve_client(stack_name=stack_name, api_url=api_url, workdir=workdir, user=user)
            return fn(api=api, **kwargs)
        except ApiFailure as exc:
            fail(exc.code, exc.message, exc.exit_code, as_json=as_json)
        except Unreachable as exc:
            fail("UNREACHABLE", str(exc), EXIT_UNREACHABLE, as_json=as_json)
        except click.UsageError as exc:
            if not as_json:
                raise
            fail("USAGE", exc.format_message(), EXIT_USAGE, as_json=True)

    return wrapper


def exit_code_for(job: dict[str, Any]) -> int:
    """0 completed; 3 completed with failed pages; 8 paused for its owner's budget; 2 failed for its input
    (PDF_ENCRYPTED, PDF_CORRUPT, ...: the code a file refused before upload gets too); 1 failed otherwise, or cancelled."""
    if job["status"] == PAUSED:
        return EXIT_PAUSED
    if job["status"] != "completed":
        return EXIT_USAGE if job["status"] == "failed" and is_input_error((job.get("error") or {}).get("code")) else EXIT_JOB_FAILED
    return EXIT_PAGES_FAILED if job["pages"]["failed"] else EXIT_OK


def say_job_error(job: dict[str, Any]) -> None:
    """A failed job's error on stderr, as any refusal is said: ``error: CODE: message``, then what to do next."""
    error = job.get("error")
    if job["status"] == "failed" and error:
        click.echo(f"error: {error['code']}: {error['message']}", err=True)
        click.echo(f"  next: {error['nextStep']}", err=True)


def watch(api: ApiClient, job_id: str, *, interval_s: float, quiet: bool) -> dict[str, Any]:
    """Poll until the job ends; a progress bar on stderr unless ``quiet``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    job = api.job(job_id)
    console = Console(stderr=True)
    if not quiet and not console.is_terminal:  # a log or a pipe: a bar would show only at the end (up to 24 h for a batch job)
        return _watch_lines(api, job, interval_s=interval_s)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, disable=quiet) as bar:
        task = bar.add_task(job["phase"], total=max(job["pages"]["total"], 1))
        while True:
            # total is 0 while the job splits: the bar learns it once the split is done
            bar.update(task, total=max(job["pages"]["total"], 1), completed=job["pages"]["done"], description=f"{job['phase']:>16}")
            if job["status"] in TERMINAL:
                return job
            if job["status"] == PAUSED:  # nothing moves it until its owner resumes it: stop watching, say how
                bar.stop()
                click.echo(paused_line(job), err=True)
                return job
            time.sleep(interval_s)
            job = api.job(job_id)


def progress_line(job: dict[str, Any]) -> str:
    """One line for a log: when, status (phase), pages done, failed, of the total."""
    pages = job["pages"]
    failed = f", {pages['failed']} failed" if pages["failed"] else ""
    phase = "" if job["phase"] == job["status"] else f" ({job['phase']})"
    return f"{time.strftime('%H:%M:%S')} {job['status']}{phase}: {pages['done']}/{pages['total']} pages{failed}"


def _watch_lines(api: ApiClient, job: dict[str, Any], *, interval_s: float) -> dict[str, Any]:
    """:func:`watch` when stderr is not a terminal: a line each time the status, phase or counts change."""
    last = None
    while True:
        line = progress_line(job)
        if line.split(" ", 1)[1] != last:
            click.echo(line, err=True)
            last = line.split(" ", 1)[1]
        if job["status"] in TERMINAL:
            return job
        if job["status"] == PAUSED:
            click.echo(paused_line(job), err=True)
            return job
        time.sleep(interval_s)
        job = api.job(job["jobId"])


def status_words(job: dict[str, Any]) -> str:
    """``completed with 2 failed pages`` rather than ``completed (completed)`` beside a count elsewhere."""
    failed = int(job["pages"]["failed"] or 0)
    if job["status"] == "completed" and failed:
        return f"completed with {failed} failed page{'s' if failed != 1 else ''} (batchlane jobs pages {job['jobId']})"
    return job["status"] if job["phase"] == job["status"] else f"{job['status']} ({job['phase']})"


def hold_words(hold: dict[str, Any]) -> str:
    """The funds hold in words: what was reserved against the budget, and what became of it."""
    amount = f"${hold['amountUsd']}"
    if hold["outcome"] == "settled":
        return f"{amount} was reserved for the worst case; settled at the job's cost (${hold['settledUsd']}), the rest released"
    if hold["outcome"] in ("released", "cancelled"):
        return f"{amount} was reserved for the worst case; released ({hold['outcome']}), nothing more charged"
    return f"{amount} reserved against your budget for the worst case while the job runs (a retry reserves its pages again)"


def saving_words(live: dict[str, Any]) -> str:
    """The job's saving against all on-demand (docs/operations.md "Estimates, holds, savings and pauses"): a loss is said as one."""
    saving = Decimal(live["savingUsd"])
    if saving < 0:
        return (
            f"a LOSS of ${-saving}: {-Decimal(live['savingPercent'])} % more than all on-demand (${live['onDemandUsd']}); "
            "batch records were billed and not used"
        )
    return f"${saving} ({live['savingPercent']} %); all on-demand would be ${live['onDemandUsd']}"


def _print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job))
        return
    click.echo(f"job {job['jobId']} (file {job['fileId']})")
    click.echo(f"  status  {status_words(job)}")
    pages = job["pages"]
    click.echo(f"  pages   {pages['done']}/{pages['total']} done, {pages['failed']} failed, {pages['batchServed']} from the batch lane")
    if job["batch"]:
        b = job["batch"]
        details = (("bedrock", b["bedrockStatus"]), ("end", b["endState"]), ("reason", b["reason"]))
        click.echo(f"  batch   {b['state']}" + "".join(f", {k} {v}" for k, v in details if v))
    if job["hold"]:
        click.echo(f"  hold    {hold_words(job['hold'])}")
    click.echo(f"  cost    ${job['costUsd']}")
    if job.get("live"):
        click.echo(f"  saving  {saving_words(job['live'])}")
    if job["error"]:
        click.echo(f"  error   {job['error']['code']}: {job['error']['message']}")
        click.echo(f"  next    {job['error']['nextStep']}")
    if job.get("retry"):
        click.echo(f"  retry   {job['retry']['attempt']} running: pages {', '.join(map(str, job['retry']['pages']))}")


def output_path(pdf: Path, output: Path | None, *, force: bool) -> Path:
    """Where the Markdown goes: ``-o``, else next to the PDF (``book.pdf`` → ``book.md``). Never the
    input itself; never an existing file without ``--force``. Checked before anything is uploaded."""
    target = output or pdf.with_name(f"{pdf.stem if by_extension(pdf.name) is not None else pdf.name}.md")
    if target.exists() and target.resolve() == pdf.resolve():
        raise click.UsageError(f"{target} is the input PDF; choose another output with -o")
    if target.is_dir():
        raise click.UsageError(f"{target} is a directory; give a file name with -o")
    if target.exists() and not force:
        raise click.UsageError(f"{target} exists; pass --force to overwrite it, or choose another with -o")
    if target.parent.exists() and not target.parent.is_dir():
        raise click.UsageError(f"{target.parent} is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)  # `-o out/book.md` on a fresh clone, as the README shows it
    return target


def download_markdown(api: ApiClient, job_id: str, target: Path, *, force: bool) -> dict[str, Any]:
    """GET /jobs/{id}/markdown (a presigned URL), then the file itself, straight from S3, and what goes beside it."""
    answer = api.call("GET", f"/api/v1/jobs/{job_id}/markdown")
    size = api.download(answer["url"], target, force=force)
    return {**answer, "path": str(target), "sizeBytes": size, **download_beside(api, answer, target, force=force)}


def download_beside(api: ApiClient, answer: dict[str, Any], target: Path, *, force: bool) -> dict[str, Any]:
    """The figure files where the Markdown's links point, and its per-page record as ``book.pages.jsonl`` beside
    ``book.md`` (replaced with the Markdown it belongs to: it describes that file's pages)."""
    from batchlane_dev.local.outputs import pages_path

    images = [str(download_image(api, image, target.parent, force=force)) for image in answer.get("images") or []]
    pages = None
    if answer.get("pages"):
        pages = pages_path(target)
        api.download(str(answer["pages"]["url"]), pages, force=True)
    renderings = []
    for rendering in answer.get("renderings") or []:  # conversionFormats: beside the Markdown, named after it
        if rendering.get("status") == "written":
            path = target.parent / rendering_name(target.name, str(rendering["format"]))
            api.download(str(rendering["url"]), path, force=force)
            renderings.append(str(path))
    return {"imagePaths": images, "pagesPath": str(pages) if pages else None, "renderingPaths": renderings}


def download_image(api: ApiClient, image: dict[str, Any], folder: Path, *, force: bool) -> Path:
    """One figure file where the Markdown's link points (``book.images/p12-1.png`` beside it); a name that
    would leave that folder (absolute, ``..``) is refused, since it comes from the server."""
    parts = Path(str(image["fileName"])).parts
    if len(parts) != 2 or any(part in ("", ".", "..") or part.startswith("/") for part in parts):
        raise ApiFailure(502, "DOWNLOAD_FAILED", f"the image name is not <folder>/<file>: {image['fileName']}")
    target = folder.joinpath(*parts)
    target.parent.mkdir(exist_ok=True)
    api.download(str(image["url"]), target, force=force)
    return target


def check_local_pdf(pdf: Path) -> None:
    """Refuse an empty file or one of no type batchlane converts before anything is uploaded: the split's own rule
    and ids (PDF_EMPTY, PDF_NOT_PDF, FILE_TYPE_UNSUPPORTED; domain/file_types.identify), exit 2."""
    with pdf.open("rb") as stream:
        head = stream.read(4096)
    members: list[str] = []
    if is_zip(head):
        try:
            with zipfile.ZipFile(pdf) as archive:
                members = archive.namelist()
        except (zipfile.BadZipFile, OSError):
            members = []
    found = identify(head, pdf.name, pdf.stat().st_size, members)
    if isinstance(found, tuple):
        raise ApiFailure(400, found[0], f"{pdf}: {found[1]}")


def _register_and_upload(api: ApiClient, pdf: Path) -> str:
    check_local_pdf(pdf)
    data = pdf.read_bytes()
    registered = api.call("POST", "/api/v1/files", {"name": pdf.name, "sizeBytes": len(data)})
    api.upload(registered["upload"], data, filename=pdf.name)
    return str(registered["fileId"])


def money_lines(estimate: dict[str, Any]) -> list[str]:
    """The dry run's money in words (docs/operations.md "Estimates, holds, savings and pauses"): the cost on the lane the job will
    take (both figures and the condition where it depends), the worst case, the hold, the room left or the refusal."""
    if estimate.get("lane") == "depends":
        cost = f"  cost        {estimate['condition']} (estimate)"
    elif estimate.get("lane") == "batch":
        cost = f"  cost        ${estimate['costUsd']} in the batch lane at half price (estimate; all on-demand ${estimate['onDemandUsd']})"
    else:
        cost = f"  cost        ${estimate['costUsd']} on-demand (estimate)"
    lines = [cost]
    if "worstCaseUsd" in estimate:
        lines.append(f"  worst case  ${estimate['worstCaseUsd']}; holds ${estimate['holdUsd']} of your budget at a time ({estimate['holdBasis']})")
    if estimate.get("refusal"):
        lines.append(f"  budget      would be refused: {estimate['refusal']}")
    elif "roomLeftUsd" in estimate:
        lines.append(f"  budget      ${estimate['roomLeftUsd']} of this month's ${estimate['budgetUsdPerMonth']} left")
    return lines


def _print_dry_run(answer: dict[str, Any]) -> None:
    pages, lane, estimate, turnaround = answer["pages"], answer["lane"], answer["estimate"], answer["turnaround"]
    click.echo(f"dry run for {answer['name']} ({answer['sizeBytes']} bytes): nothing was created or billed")
    if "pageIs" in pages:  # a born-digital file (docs/formats.md): no model call for its text
        shown = pages["total"] if pages["total"] is not None else "counted at conversion"
        click.echo(f"  pages       {shown} (a page is {pages['pageIs']})")
        figures = answer.get("figures")
        if figures is not None:  # describeFigures: its pictures are the model calls
            _print_figures(figures)
        click.echo(f"  lane        {lane['name']} ({lane['reason']})")
        click.echo(f"  cost        ${estimate['costUsd']} ({estimate['basis']})")
        if figures is not None and figures.get("toDescribe"):
            click.echo(f"  hold        ${estimate['holdUsd']} (each picture's worst case)")
        click.echo(f"  turnaround  {turnaround['expected']}")
        return
    sampled = f" ({answer['inspection']['note']})" if answer["inspection"]["note"] else ""
    if pages["total"] is None or pages.get("range"):  # over the dry run's byte bound: not surveyed
        low, high = pages.get("range") or (pages["total"], pages["total"])
        click.echo(f"  pages       {pages['total'] if pages['total'] is not None else f'{low}-{high}'}{sampled}")
    else:
        click.echo(f"  pages       {pages['total']} ({pages['blank']} blank, {pages['scans']} without text){sampled}")
    click.echo(f"  records     {answer['records']} (one model document per non-blank page)")
    click.echo(f"  lane        {lane['name']} ({lane['reason']}; the batch lane takes jobs of {lane['minPages']}+ pages)")
    for line in money_lines(estimate):
        click.echo(line)
    click.echo(f"  turnaround  {turnaround['expected']}")


def _print_figures(figures: dict[str, Any]) -> None:
    """The pictures a dry run found and what describing each costs at its lane."""
    if figures["pictures"] is None:
        click.echo(f"  pictures    not counted ({figures['basis']})")
        return
    skipped = ", ".join(f"{n} {why}" for why, n in figures["notDescribed"].items())
    click.echo(f"  pictures    {figures['pictures']} ({figures['toDescribe']} to describe{'; not described: ' + skipped if skipped else ''})")
    for picture in figures["perPicture"]:
        click.echo(f"    {picture['name']}  {picture['width']}×{picture['height']} px  {picture['inputTokens']} tokens in  ${picture['costUsd']}")
    if figures["toDescribe"] > figures["listed"]:
        click.echo(f"    … and {figures['toDescribe'] - figures['listed']} more")


def callback_options(url: str | None, events: str | None, headers: tuple[str, ...]) -> dict[str, Any]:
    """--callback-* as the job options the API validates (400 CALLBACK_INVALID says what is wrong)."""
    if not url:
        if events or headers:
            raise click.UsageError("--callback-events and --callback-header need --callback-url")
        return {}
    options: dict[str, Any] = {"callbackUrl": url}
    if events:
        options["callbackEvents"] = [e.strip() for e in events.split(",") if e.strip()]
    if headers:
        pairs = [h.split(":", 1) for h in headers]
        if any(len(p) != 2 for p in pairs):
            raise click.UsageError("--callback-header takes NAME:VALUE")
        options["callbackHeaders"] = {name.strip(): value.strip() for name, value in pairs}
    return options


# -- commands ----------------------------------------------------------------------------
def _existing_source(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A local path that is not there is a usage error (exit 2) said before the stack is looked for."""
    if value.startswith("s3://") or Path(value).exists():
        return value
    raise click.BadParameter(f"{value}: no such file or folder", ctx=ctx, param=param)


@click.command()
@click.argument("pdf", metavar="PDF|DIR/|s3://BUCKET/FOLDER/", callback=_existing_source)
@click.option("--layout", type=click.Choice(["alongside", "mirror", "flat"]), help="Folder jobs: where the Markdown goes (default alongside).")
@click.option("--output-folder", help="Folder jobs: s3:// folder for mirror or flat.")
@click.option(
    "--include", multiple=True, help="Folder jobs: glob of keys to convert (repeatable; default: PDFs and the born-digital types; pictures only when named)."
)
@click.option("--exclude", multiple=True, help="Folder jobs: glob of keys to leave out (repeatable).")
@click.option("--replace", is_flag=True, help="Folder jobs: convert again files whose output exists (default: skip them).")
@click.option("--detach", is_flag=True, help="Print the job id and return at once instead of watching to the end.")
@click.option("--json", "as_json", is_flag=True, help="Print the job as one JSON object on stdout.")
@click.option("--bulk", is_flag=True, help="Bulk opt-in: send the job through the batch lane whatever its size.")
@click.option(
    "--describe-figures",
    is_flag=True,
    help="Have Claude describe each picture of a born-digital document (DOCX, PPTX, XLSX, HTML, EPUB, ODT) as its alt text; billed per picture (docs/formats.md).",
)
@click.option(
    "--deadline",
    metavar="ISO-8601",
    help="Finish by then: the pages wait for the half-price batch lane only while a batch turnaround still fits, then go on-demand (a deadline sooner than one turnaround needs the batchlane-priority group).",
)
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True, help="Seconds between progress polls.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Where to write the Markdown (default: next to the PDF, FILE.md; a local DIR/: a folder, default DIR itself).",
)
@click.option("--force", is_flag=True, help="Overwrite the output file(s) if they exist (never the input).")
@click.option("--dry-run", is_flag=True, help="Say what the conversion would do, take and cost; convert nothing, bill nothing.")
@click.option("--callback-url", help="POST signed webhooks about this job to this URL (https; docs/operations.md).")
@click.option("--callback-events", help="Comma-separated: job.completed and job.paused (default), job.waiting_batch, file.error, file.completed.")
@click.option("--callback-header", "callback_headers", multiple=True, metavar="NAME:VALUE", help="An extra header for the receiver (repeatable).")
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(["docx", "html", "json"]),
    help="Also write this rendering beside the Markdown (repeatable): FILE.converted.docx, .converted.html, .blocks.jsonl (docs/formats.md).",
)
@target_options
def convert(
    api: ApiClient,
    pdf: str,
    detach: bool,
    as_json: bool,
    bulk: bool,
    interval: float,
    output: Path | None,
    force: bool,
    dry_run: bool,
    callback_url: str | None = None,
    callback_events: str | None = None,
    callback_headers: tuple[str, ...] = (),
    deadline: str | None = None,
    layout: str | None = None,
    output_folder: str | None = None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    replace: bool = False,
    formats: tuple[str, ...] = (),
    describe_figures: bool = False,
) -> None:
    """Upload PDF and convert it; watch it to the end and write the Markdown next to it (or --detach).

    A folder (s3://bucket/path/, or a local DIR/ uploaded to the offline stack) becomes a folder job."""
    if pdf.startswith("s3://") or Path(pdf).is_dir():
        local_dir = None if pdf.startswith("s3://") else Path(pdf)
        local_target = None if local_dir is None or dry_run or detach else (output or local_dir)
        if local_dir is not None and local_target is not None:
            folder_commands.check_local_targets(local_dir, local_target, force=force)
        uri = pdf if local_dir is None else folder_commands.upload_local_folder(local_dir, workdir=api.workdir or DEFAULT_WORKDIR, user=api.local_user())
        spec = folder_commands.folder_spec(uri, layout=layout, output=output_folder, include=include, exclude=exclude, replace=replace, deadline=deadline)
        if formats:
            spec.setdefault("options", {})["conversionFormats"] = {"md": True, **dict.fromkeys(formats, True)}
        if describe_figures:
            spec.setdefault("options", {})["describeFigures"] = True
        folder_commands.convert_folder(
            api, uri, spec, dry_run=dry_run, detach=detach, as_json=as_json, interval=interval, local_target=local_target, shown_as=pdf if local_dir else None
        )
        return
    if not Path(pdf).is_file():
        raise click.UsageError(f"{pdf} is not a file, a folder or an s3:// folder URI")
    options: dict[str, Any] = {"batchLane": True} if bulk else {}
    if deadline:
        options["deadline"] = deadline
    options.update(callback_options(callback_url, callback_events, callback_headers))
    if formats:
        options["conversionFormats"] = {"md": True, **dict.fromkeys(formats, True)}
    if describe_figures:
        options["describeFigures"] = True
    return _convert_pdf(api, Path(pdf), options, detach=detach, as_json=as_json, interval=interval, output=output, force=force, dry_run=dry_run)


def _convert_pdf(
    api: ApiClient, pdf: Path, options: dict[str, Any], *, detach: bool, as_json: bool, interval: float, output: Path | None, force: bool, dry_run: bool
) -> None:
    if dry_run:
        file_id = _register_and_upload(api, pdf)
        try:
            answer = api.estimate(f"/api/v1/files/{file_id}/convert?dry_run=true", {"options": options}, quiet=as_json)
        finally:
            api.call("DELETE", f"/api/v1/files/{file_id}")  # the upload served the dry run only
        if as_json:
            click.echo(json.dumps(answer))
        else:
            _print_dry_run(answer)
        return
    target = None if detach else output_path(pdf, output, force=force)
    file_id = _register_and_upload(api, pdf)
    created = api.call("POST", f"/api/v1/files/{file_id}/convert", {"options": options})
    job_id = created["jobId"]
    if detach:
        # One shape for a job: the one `jobs status --json` prints (error {code, message}, pages {total, …}).
        click.echo(json.dumps(api.job(job_id)) if as_json else job_id)
        return
    click.echo(f"job {job_id}: {created['status']}", err=True)  # splitting: pages are counted by the split
    job = watch(api, job_id, interval_s=interval, quiet=as_json)
    if job["status"] == "completed" and target is not None:
        written = download_markdown(api, job_id, target, force=force)
        job = {**job, "markdownPath": written["path"], **({"renderingPaths": written["renderingPaths"]} if written["renderingPaths"] else {})}
        job.update({"pagesPath": written["pagesPath"], "imagePaths": written["imagePaths"]})  # what was written beside it
        click.echo(f"markdown written to {written['path']}", err=True)
    _print_job(job, as_json)
    say_job_error(job)
    sys.exit(exit_code_for(job))


@click.group()
def jobs() -> None:
    """List jobs and follow one."""


@jobs.command("list")
@click.option("--status", type=click.Choice(JOB_STATUSES), help="Only jobs in this status.")
@click.option("--all", "with_folder_files", is_flag=True, help="Also each folder file's own conversion (marked with its folder job).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: {jobs: [files with their conversion], folderJobs: [...]}.")
@target_options
def list_jobs(api: ApiClient, status: str | None, with_folder_files: bool, as_json: bool) -> None:
    """Your conversions and folder jobs, newest first (a folder file's conversion only with --all)."""
    files = api.call("GET", "/api/v1/files" + (f"?status={status}" if status else ""))["files"]
    converted = [f for f in files if f["conversion"] and (with_folder_files or not f.get("folderJobId"))]
    folders = [] if status else api.call("GET", "/api/v1/folder-jobs")["folderJobs"]
    if as_json:
        click.echo(json.dumps({"jobs": converted, "folderJobs": folders}))
        return
    rows: list[tuple[str, ...]] = [
        (
            f["conversion"]["createdAt"] or "",
            f["conversion"]["jobId"],
            *_columns(f["conversion"]),
            f["name"] + (f"  (in {f['folderJobId']})" if f.get("folderJobId") else ""),
        )
        for f in converted
    ]
    for job in folders:
        files_, pages_ = job["files"], job["pages"]
        done = f"{files_['completed']}/{files_['discovered']} files"
        rows.append((job["createdAt"], job["id"], job["status"], "folder job", done, f"{pages_['failed']} pages failed" if pages_["failed"] else "", job.get("name") or ""))
    if not rows:
        click.echo("no jobs yet: convert a PDF with `batchlane convert FILE`", err=True)
        return
    rows.sort(key=lambda row: row[0], reverse=True)  # newest first, files and folder jobs together (ISO 8601 in UTC sorts as text)
    table = [("CREATED", "JOB", "STATUS", "PHASE", "PROGRESS", "BATCH", "NAME")] + [(_when(row[0]), *row[1:]) for row in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(6)]
    for row in table:
        click.echo(("  ".join(str(cell).ljust(width) for cell, width in zip(row[:6], widths, strict=True)) + "  " + row[6]).rstrip())


def _when(iso: str) -> str:
    """An API timestamp as the reader's local date and minute (``2026-12-06 07:41``)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso or "-"


def _columns(job: dict[str, Any]) -> tuple[str, str, str, str]:
    """status, phase, pages, batch: the columns of `jobs list`, aligned by the caller."""
    pages = job["pages"]
    batch = ""
    if job["batch"]:
        batch = f"batch {job['batch']['state']}" + (f" ({job['batch']['bedrockStatus']})" if job["batch"]["bedrockStatus"] else "")
    return job["status"], job["phase"], f"{pages['done']}/{pages['total']} pages", batch


@jobs.command("status")
@click.argument("job_id", metavar="JOB")
@click.option("--watch", "follow", is_flag=True, help="Follow the job to its end; the exit code then says how it ended.")
@click.option("--json", "as_json", is_flag=True, help="Print the job as one JSON object.")
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True, help="Seconds between progress polls.")
@target_options
def job_status(api: ApiClient, job_id: str, follow: bool, as_json: bool, interval: float) -> None:
    """Where JOB is: status, phase, pages, lane, hold, cost (a folder job fj-…: files, pages, throughput, ETA)."""
    if folder_commands.is_folder_job(job_id):
        folder = folder_commands.watch(api, job_id, interval_s=interval, quiet=as_json) if follow else api.call("GET", f"/api/v1/folder-jobs/{job_id}")
        folder_commands.print_job(folder, as_json)
        if follow:
            sys.exit(folder_commands.exit_code(folder))
        return
    job = watch(api, job_id, interval_s=interval, quiet=as_json) if follow else api.job(job_id)
    _print_job(job, as_json)
    if follow:
        say_job_error(job)
        sys.exit(exit_code_for(job))


@jobs.command("download")
@click.argument("job_id", metavar="JOB")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Where to write it (default: the PDF's name, .md, here).")
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the download (path, size, when the stored copy expires) as JSON.")
@target_options
def download(api: ApiClient, job_id: str, output: Path | None, force: bool, as_json: bool) -> None:
    """Write JOB's Markdown to a file (a presigned URL, valid minutes; the stored copy lasts 14 days)."""
    answer = api.call("GET", f"/api/v1/jobs/{job_id}/markdown")
    target = output or Path(answer["fileName"])
    if target.exists() and not force:
        raise click.UsageError(f"{target} exists; pass --force to overwrite it, or choose another with -o")
    target.parent.mkdir(parents=True, exist_ok=True)  # `-o out/book.md` with no out/ yet, as `convert -o` allows
    size = api.download(answer["url"], target, force=force)
    result = {**answer, "path": str(target), "sizeBytes": size, **download_beside(api, answer, target, force=force)}
    images = result["imagePaths"]
    if as_json:
        click.echo(json.dumps(result))
    else:
        failed = f"; {answer['pagesFailed']} page(s) failed (batchlane jobs pages {job_id})" if answer["pagesFailed"] else ""
        figures = f", {len(images)} figure file(s) beside it" if images else ""
        click.echo(f"{target} ({size} bytes{figures}); stored copy expires {answer['objectExpiresAt']}{failed}")


@jobs.command("pages")
@click.argument("job_id", metavar="JOB")
@click.option("--status", type=click.Choice(["failed"]), default="failed", show_default=True, help="Which pages to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def pages(api: ApiClient, job_id: str, status: str, as_json: bool) -> None:
    """JOB's failed pages: page number, reason, attempts, lane."""
    answer = api.call("GET", f"/api/v1/jobs/{job_id}/pages?status={status}")
    if as_json:
        click.echo(json.dumps(answer))
        return
    if not answer["pages"]:
        click.echo(f"no {status} pages", err=True)
        return
    click.echo(f"{'page':>6}  {'attempts':>8}  {'lane':<10} {'retry':<9} reason")
    for page in answer["pages"]:
        helps = "may help" if page["retryLikelyToHelp"] else "unlikely"
        click.echo(f"{page['page']:>6}  {page['attempts']:>8}  {page['lane'] or '-':<10} {helps:<9} {page['reason']}")
    if estimate := answer.get("retryEstimate"):
        click.echo(f"a retry of all {estimate['pages']} costs at most ${estimate['atMostUsd']}: batchlane retry {job_id}", err=True)


@jobs.command("files")
@click.argument("job_id", metavar="FOLDER_JOB")
@click.option("--status", type=click.Choice(["queued", "processing", "completed", "failed", "skipped"]), help="Only files in this status.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def folder_files(api: ApiClient, job_id: str, status: str | None, as_json: bool) -> None:
    """A folder job's files: key, status, pages, attempts, error id and message, outputs."""
    folder_commands.print_files(api.call("GET", f"/api/v1/folder-jobs/{job_id}/files" + (f"?status={status}" if status else "")), as_json)


@jobs.command("report")
@click.argument("job_id", metavar="FOLDER_JOB")
@target_options
def folder_report(api: ApiClient, job_id: str) -> None:
    """A folder job's report.jsonl on stdout (one line per finished file): batchlane jobs report ID > report.jsonl."""
    after: str | None = None
    while True:  # the API answers a page at a time; X-Next-After names the next one
        query = "?after=" + urllib.parse.quote(after, safe="") if after else ""
        body, headers = api.text_page(f"/api/v1/folder-jobs/{job_id}/report{query}")
        click.echo(body, nl=False)
        after = headers.get("X-Next-After")
        if not after:
            return


@click.command()
@click.argument("job_id", metavar="JOB")
@click.option(
    "--error-id",
    "error_ids",
    multiple=True,
    help="Retry only pages that failed for this reason (repeatable): the reason as listed, without stop_reason= (max_tokens), or throttled / timeout.",
)
@click.option("--page", "page_numbers", type=click.IntRange(1), multiple=True, help="Retry only this page (repeatable).")
@click.option("--detach", is_flag=True, help="Return once the retry has started.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True, help="Seconds between progress polls.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the new Markdown here once the retry is done.")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists (e.g. the Markdown written by convert).")
@target_options
def retry(
    api: ApiClient,
    job_id: str,
    error_ids: tuple[str, ...],
    page_numbers: tuple[int, ...],
    detach: bool,
    as_json: bool,
    interval: float,
    output: Path | None,
    force: bool,
) -> None:
    """Convert JOB's failed pages again (only those, on-demand) and splice them into its Markdown.

    A folder job (fj-…): requeue its failed files (only those with --error-id, if given)."""
    if folder_commands.is_folder_job(job_id):
        folder = api.call("POST", f"/api/v1/folder-jobs/{job_id}/retry", {"errorIds": list(error_ids)} if error_ids else {})
        if folder["status"] == "enumerating" and not folder["requeued"]:  # it could not run (an empty folder): listed afresh
            click.echo(f"folder job {job_id}: listing its folder again", err=True)
        else:
            click.echo(f"folder job {job_id}: {folder['requeued']} file(s) queued again", err=True)
        if not detach:
            folder = folder_commands.watch(api, job_id, interval_s=interval, quiet=as_json)
        folder_commands.print_job(folder, as_json)
        sys.exit(folder_commands.exit_code(folder) if not detach else 0)
    if output is not None and output.exists() and not force:
        raise click.UsageError(f"{output} exists; pass --force to overwrite it")
    body: dict[str, Any] = {}
    if error_ids:
        body["errorIds"] = list(error_ids)
    if page_numbers:
        body["pages"] = list(page_numbers)
    if not as_json:
        _warn_before_retry(api, job_id, page_numbers)
    started = api.call("POST", f"/api/v1/jobs/{job_id}/retry", body)
    if detach:
        click.echo(json.dumps(started) if as_json else f"retry {started['retry']} of job {job_id}: {len(started['pages'])} page(s)")
        return
    click.echo(f"retry {started['retry']} of job {job_id}: pages {', '.join(map(str, started['pages']))}", err=True)
    job = watch(api, job_id, interval_s=interval, quiet=as_json)
    if output is not None and job["status"] == "completed":
        job = {**job, "markdownPath": download_markdown(api, job_id, output, force=force)["path"]}
        click.echo(f"markdown written to {output}", err=True)
    _print_job(job, as_json)
    say_job_error(job)
    sys.exit(exit_code_for(job))


def _warn_before_retry(api: ApiClient, job_id: str, page_numbers: tuple[int, ...]) -> None:
    """Before anything is charged: what the retry may cost, and which pages a retry cannot cure (a refusal)."""
    answer = api.call("GET", f"/api/v1/jobs/{job_id}/pages?status=failed")
    estimate = answer.get("retryEstimate")
    if not estimate:
        return
    chosen = [p for p in answer["pages"] if not page_numbers or p["page"] in page_numbers]
    per_page = float(estimate["atMostUsd"]) / max(int(estimate["pages"]), 1)
    click.echo(f"retry: {len(chosen)} failed page(s) converted on-demand again, at most ${per_page * len(chosen):.4f} (billed for what is used)", err=True)
    hopeless = [p for p in chosen if p["page"] in set(estimate["unlikelyToChange"])]
    if hopeless:
        why = ", ".join(f"{p['page']} ({p['reason']})" for p in hopeless)
        click.echo(f"  pages {why} were refused for what they contain: a retry most likely fails the same way and is charged again", err=True)


def _file_action(api: ApiClient, job_id: str, action: str) -> dict[str, Any]:
    """POST /files/{fileId}/{action} for JOB (the API's routes are per file, with the job in the body)."""
    job = api.job(job_id)
    return api.call("POST", f"/api/v1/files/{job['fileId']}/{action}", {"jobId": job_id})


@click.command()
@click.argument("job_id", metavar="JOB")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def cancel(api: ApiClient, job_id: str, as_json: bool) -> None:
    """Cancel JOB: nothing more is spent (what it spent is its cost), the file goes back to uploaded (a folder job: queued files skipped, in-flight ones finish)."""
    if folder_commands.is_folder_job(job_id):
        folder_commands.print_job(api.call("POST", f"/api/v1/folder-jobs/{job_id}/cancel"), as_json)
        return
    result = _file_action(api, job_id, "cancel")
    if as_json:
        click.echo(json.dumps(result))
    elif result.get("retryCancelled"):
        click.echo(f"retry {result['retryCancelled']} of job {job_id} cancelled; the job is completed as before (same Markdown)")
    elif result["alreadyCancelled"]:
        click.echo(f"job {job_id} was already cancelled")
    else:
        stop = "; the batch job is being stopped" if result["batchStopRequested"] else ""
        click.echo(f"job {job_id} cancelled (was {result['previousStatus']}); file back to uploaded; funds hold released{stop}")


@click.command("process-now")
@click.argument("job_id", metavar="JOB")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def process_now(api: ApiClient, job_id: str, as_json: bool) -> None:
    """Stop waiting for the batch lane: convert JOB on-demand now."""
    result = _file_action(api, job_id, "process-now")
    if as_json:
        click.echo(json.dumps(result))
    elif result["action"] == "flagged_while_splitting":
        click.echo(f"job {job_id} is still being split; it will convert on-demand as soon as it is split")
    elif result["action"] == "stopping_batch_job":
        click.echo(
            f"job {job_id}: its Bedrock batch job is being stopped; the pages it already converted (billed either way) are used, "
            "the rest convert on-demand once it has stopped"
        )
    elif result["resumed"]:
        stop = "; the batch job is being stopped (its output is still billed once)" if result["batchStopRequested"] else ""
        click.echo(f"job {job_id} is converting on-demand now{stop}")
    else:
        click.echo(f"job {job_id}: its batch results are in; it resumes with them shortly")


@click.command()
@click.argument("job_id", metavar="JOB")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def resume(api: ApiClient, job_id: str, as_json: bool) -> None:
    """Resume JOB, paused at its funds hold (error BUDGET_EXCEEDED while the budget does not allow it)."""
    result = api.call("POST", f"/api/v1/jobs/{job_id}/resume", {})
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(f"job {job_id} resumed with a hold of {result['holdUsd']} USD ({result['spentUsd']} USD spent so far)")


@click.command()
@click.option("--set-for", "owner", metavar="USER", help="Set USER's budget and caps (admin group only); without it: show yours.")
@click.option("--usd-per-month", type=str, help="USD for the calendar month (UTC); 'default' for the deployment's.")
@click.option("--max-live-jobs", type=str, help="Conversions live at once; 'default' for the deployment's.")
@click.option("--max-live-pages", type=str, help="Pages of those conversions together; 'default' for the deployment's.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object on stdout.")
@target_options
def budget(api: ApiClient, owner: str | None, usd_per_month: str | None, max_live_jobs: str | None, max_live_pages: str | None, as_json: bool) -> None:
    """Your budget, caps and what is committed; or, with --set-for, set a user's (docs/operations.md "Budgets, caps and fair sharing")."""
    if owner is None:
        if usd_per_month or max_live_jobs or max_live_pages:
            raise click.UsageError("--usd-per-month / --max-live-jobs / --max-live-pages need --set-for USER")
        result = api.call("GET", "/api/v1/budget")
    else:

        def value(raw: str | None, cast: Callable[[str], Any]) -> Any:
            return None if raw in (None, "default") else cast(raw)

        body = {"usdPerMonth": value(usd_per_month, str), "maxLiveJobs": value(max_live_jobs, int), "maxLivePages": value(max_live_pages, int)}
        result = api.call("PUT", f"/api/v1/admin/budgets/{owner}", body)
    if as_json:
        click.echo(json.dumps(result))
        return
    click.echo(f"budget {result['usdPerMonth']} USD this month, {result['committedUsd']} USD spent or held")
    click.echo(f"live conversions {result['liveJobs']} of {result['maxLiveJobs']}, live pages {result['livePages']} of {result['maxLivePages']}")


COMMANDS = (convert, jobs, retry, cancel, process_now, resume, budget)
