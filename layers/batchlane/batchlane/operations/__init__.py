"""Operations a user or an operator performs on a job: cancel and process now.

The API (``batchlane.api``) and the CLI share these; each is one guarded transaction
on the job row (``SELECT ... FOR UPDATE``), so it serialises with every other state
change of the same job (resume, start, assemble, settle), and the side effects outside
the database (stopping a Bedrock job, starting a workflow) happen after the commit.
Stranded jobs are resumed by ``batch.resume.resume_stranded`` (functions/recovery).
"""

from batchlane.operations.cancel import CancelOutcome, cancel_job
from batchlane.operations.process_now import ProcessNowOutcome, process_now

__all__ = ["CancelOutcome", "ProcessNowOutcome", "cancel_job", "process_now"]
