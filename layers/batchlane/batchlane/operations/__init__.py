"""Operations on a job from outside its workflows: cancel (a user), recovery (the schedule).

The API (``batchlane.api``) and the CLI share these; each is one guarded transaction
on the job row (``SELECT ... FOR UPDATE``), so it serialises with every other state
change of the same job (resume, start, assemble, settle), and the side effects outside
the database (stopping a Bedrock job, starting a workflow) happen after the commit.
Process now is ``batch.process_now``: the packer sends jobs on-demand for their deadline with it,
so it sits below this package (operations → batch, never back).
"""

from batchlane.operations.cancel import CancelOutcome, cancel_job

__all__ = ["CancelOutcome", "cancel_job"]
