"""The asynchronous life of one batch job, on its own thread (Submitted -> ... -> a terminal status).

The transitions and their timing: docs/offline.md "Module notes".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from . import converse, invoke, limits
from .clock import EmulatedClock, iso
from .errors import ApiError, validation
from .faults import Faults, draw
from .job import STOPPABLE, TERMINAL, Job
from .job_io import (
    InputFile,
    JobInputError,
    ShuffledOutput,
    iter_lines,
    list_input_files,
    output_prefix,
    parse_record,
    validate_input,
    write_manifest,
)
from .quotas import BatchQuotas

log = logging.getLogger(__name__)

# Emulated seconds spent in the short phases. AWS takes minutes here; the exact values
# only matter relative to the InProgress time and time_scale.
SUBMITTED_S = 30.0
VALIDATING_S = 60.0
SCHEDULED_S = 120.0

# Real lag below which the thread does not bother to sleep between records.
_MIN_SLEEP_S = 0.002


class _Shutdown(Exception):
    """The emulator is stopping: leave the job where it is."""


def request_stop(job: Job, now: float) -> None:
    """StopModelInvocationJob, and the ``job_outcome=stopped`` fault."""
    with job.lock:
        if job.status == "Stopping":
            return
        if job.status not in STOPPABLE:
            raise validation(f"The job {job.arn} is {job.status} and cannot be stopped.")
        job.stop_requested = True
        job.transition("Stopping", max(now, job.last_modified))
        job.wake.set()


class JobLifecycle:
    def __init__(
        self,
        job: Job,
        *,
        s3_client_factory: Callable[[], Any],
        faults: Faults,
        quotas: BatchQuotas,
        clock: EmulatedClock,
        shutdown: threading.Event,
        live_jobs: Callable[[], int] = lambda: 1,
    ) -> None:
        """``live_jobs``: how many of the emulator's jobs are not terminal (this one included)."""
        self.job = job
        self._live_jobs = live_jobs
        self._s3_factory = s3_client_factory
        self._faults = faults
        self._quotas = quotas
        self._clock = clock
        self._shutdown = shutdown
        self._vtime = job.submit_time
        self._validated = False

    def run(self) -> None:
        try:
            self._run()
        except _Shutdown:
            log.info("emulator stopped while job %s was %s", self.job.arn, self.job.status)
        except Exception as exc:
            log.exception("emulated job %s failed", self.job.arn)
            if self.job.status not in TERMINAL:
                self._set("Failed", message=f"Internal error in the emulated batch service: {exc}")

    # -- time ---------------------------------------------------------------------

    def _advance(self, seconds: float, *, stoppable: bool = True) -> bool:
        """Move virtual time on by ``seconds``; True if a stop request cut it short."""
        target = self._vtime + seconds
        while True:
            if self._shutdown.is_set() or self.job.forgotten:
                raise _Shutdown
            if stoppable and self.job.stop_requested:
                self._vtime = max(self._vtime, min(target, self._clock.now()), self.job.last_modified)
                return True
            remaining = self._clock.real_seconds_until(target)
            if remaining <= _MIN_SLEEP_S:
                self._vtime = target
                if remaining < 0:
                    self.job.behind_s = max(self.job.behind_s, -remaining * self._clock.scale)
                return False
            (self.job.wake if stoppable else self._shutdown).wait(remaining)

    def _idle_until(self, target: float) -> bool:
        """Wait, doing nothing, until emulated ``target``; True if a stop request cut it short.

        When this job is the only one not terminal, nothing in the emulator happens before
        ``target`` but what a caller does: the clock jumps there instead of sleeping in real
        seconds (EmulatedClock.skip_to). With other jobs live their pace needs real time, so it waits."""
        if not self.job.stop_requested and self._live_jobs() <= 1:
            jumped = self._clock.skip_to(target)
            log.info("emulated batch job %s idles until %s: the clock jumps %.1f emulated hours", self.job.arn, iso(target), jumped / 3600)
            self._vtime = max(self._vtime, target)
            return False
        return self._advance(target - self._vtime)

    def _set(self, status: str, *, message: str | None = None) -> None:
        with self.job.lock:
            if self.job.stop_requested:
                # The caller has already seen Stopping: never step back from it, and end
                # Stopped even when the Stop landed after the last record.
                if status not in TERMINAL:
                    return
                status, message = "Stopped", None
            self._vtime = max(self._vtime, self.job.last_modified)
            self.job.transition(status, self._vtime, message=message)
        log.info("emulated batch job %s is %s", self.job.arn, status)

    # -- phases -------------------------------------------------------------------

    def _run(self) -> None:
        if self._advance(SUBMITTED_S):
            return self._finish_stopped(None)
        self._set("Validating")
        s3 = self._s3_factory()
        try:
            files = list_input_files(s3, self.job.input_uri)
            total = validate_input(s3, files, self._quotas)
        except JobInputError as exc:
            self._set("Failed", message=str(exc))
            return None
        with self.job.lock:
            self.job.total = total
        self._validated = True
        if self._advance(VALIDATING_S) or self._advance_phase("Scheduled", SCHEDULED_S):
            return self._finish_stopped(s3)
        self._set("InProgress")
        ending = self._process(s3, files, total)
        return self._finish(s3, ending)

    def _advance_phase(self, status: str, seconds: float) -> bool:
        if self.job.stop_requested:
            return True
        self._set(status)
        return self._advance(seconds)

    def _process(self, s3: Any, files: list[InputFile], total: int) -> str | None:
        """Run the records; the reason the job ends early, or None when all are done."""
        per_record = self._faults.in_progress_s(total) / total
        outcome = self._faults.job_outcome
        cutoff = total // 2 if outcome in ("failed", "expired", "stopped") else None
        bucket, prefix = output_prefix(self.job.output_uri, self.job.job_id)
        index = 0
        for file in files:
            ending = None
            output = ShuffledOutput(bucket, f"{prefix}{file.output_name}.out", seed=self.job.job_id + file.key)
            try:
                for number, line in iter_lines(s3, file):
                    if index == cutoff:
                        ending = outcome
                    elif self.job.stop_requested:
                        ending = "stopped"
                    elif self._vtime + per_record > self.job.expiration_time:
                        ending = "timeout"
                    if ending:
                        break
                    output.add(self._answer(parse_record(file, number, line), index))
                    index += 1
                    self._advance(per_record)
                if len(output):
                    output.upload(s3)
            finally:
                output.close()
            if ending:
                return ending
        return "stopped" if self.job.stop_requested else None

    def _answer(self, record: dict[str, Any], index: int) -> dict[str, Any]:
        if self._faults.record_cost_ms and self._shutdown.wait(self._faults.record_cost_ms / 1000):
            raise _Shutdown
        record_id, body = record["recordId"], record["modelInput"]
        line: dict[str, Any] = {"recordId": record_id, "modelInput": body}
        error = None
        forced = self._faults.job_outcome == "partially_completed" and index == 0
        answer = invoke.model_answer if self.job.invocation_type == "InvokeModel" else converse.model_answer
        if forced or draw(record_id, "record_error") < self._faults.record_error_rate:
            error = "ModelErrorException: emulated record error (fault record_error_rate / job_outcome)."
        else:
            try:
                limits.enforce(body)  # an oversized record is that record's error, whatever its body shape
                line["modelOutput"] = answer(body, record_id, self._faults)
            except ApiError as exc:
                error = exc.message
        with self.job.lock:
            self.job.processed += 1
            if error is None:
                usage = line["modelOutput"]["usage"]  # Converse or Anthropic Messages names
                self.job.success += 1
                self.job.answered.append(record_id)
                self.job.input_tokens += usage.get("inputTokens", usage.get("input_tokens", 0))
                self.job.output_tokens += usage.get("outputTokens", usage.get("output_tokens", 0))
            else:
                self.job.errors += 1
                line["error"] = {"errorCode": 400, "errorMessage": error}
        return line

    # -- endings ------------------------------------------------------------------

    def _finish(self, s3: Any, ending: str | None) -> None:
        if self.job.behind_s > 0.1 * self.job.timeout_hours * 3600:
            log.warning(
                "emulated batch job %s fell %.1f emulated hours behind the clock: time_scale %.0f is more than this machine sustains; "
                "the handlers' timeouts run on the wall clock, so use time_scale=auto",
                self.job.arn,
                self.job.behind_s / 3600,
                self._clock.scale,
            )
        bucket, prefix = output_prefix(self.job.output_uri, self.job.job_id)
        if ending == "stopped":
            if not self.job.stop_requested:  # job_outcome=stopped: stop ourselves, as an operator would
                request_stop(self.job, self._vtime)
            return self._finish_stopped(s3)
        if ending in ("expired", "timeout"):
            if self._idle_until(self.job.expiration_time):
                return self._finish_stopped(s3)
            write_manifest(s3, bucket, prefix, self.job.manifest())
            return self._set("Expired", message="The job did not finish within its timeoutDurationInHours.")
        write_manifest(s3, bucket, prefix, self.job.manifest())
        if ending == "failed":
            return self._set("Failed", message="The batch inference job failed: emulated internal error (fault job_outcome=failed).")
        return self._set("PartiallyCompleted" if self.job.errors else "Completed")

    def _finish_stopped(self, s3: Any) -> None:
        """Stopping lasts ``stopping_s``; the partial output and manifest appear only at Stopped."""
        self._advance(self._faults.stopping_s, stoppable=False)
        if self._validated and s3 is not None:
            bucket, prefix = output_prefix(self.job.output_uri, self.job.job_id)
            write_manifest(s3, bucket, prefix, self.job.manifest())
        self._set("Stopped")
