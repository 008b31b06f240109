"""The worker pool's fork server has imported what each worker-run handler imports (a Lambda environment's
init, done once): a new worker then starts without importing its handler's use cases. Twenty of A's splits
starting at once each importing them on two cores left B's first call to a new API worker unanswered 26-40 s."""

from __future__ import annotations

from batchlane_dev.local.lambda_runtime import WorkerPool
from batchlane_dev.local.stack import PROCESS_FUNCTIONS
from tests.interpreter import in_a_fresh_interpreter


def test_every_worker_run_handler_imports_no_batchlane_module_its_fork_server_did_not() -> None:
    functions = sorted(PROCESS_FUNCTIONS | {"api"})
    code = (
        "import sys\n"
        f"for module in {list(WorkerPool.PRELOAD)!r}: __import__(module)\n"
        "before = set(sys.modules)\n"
        "from batchlane_dev.local.lambda_runtime import HandlerRegistry\n"
        "registry = HandlerRegistry('123456789012', 'us-east-1')\n"
        f"for name in {functions!r}: registry._module(name)\n"
        "late = sorted(m for m in set(sys.modules) - before if m.startswith('batchlane.'))\n"
        "assert not late, f'imported by a handler after the preload: {late}'\n"
    )
    in_a_fresh_interpreter(code)
