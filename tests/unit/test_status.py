"""The state table (batchlane.domain.status): reachable, closed at the terminal states, and the same as the database's CHECKs."""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

import pytest

from batchlane.domain import status as st
from batchlane.domain.status import ChunkStatus as C
from batchlane.domain.status import DeliveryStatus as D
from batchlane.domain.status import Entity
from batchlane.domain.status import FileStatus as F
from batchlane.domain.status import JobStatus as J
from batchlane.domain.status import LaneState as B
from batchlane.domain.status import RetryStatus as R

MIGRATIONS = Path(st.__file__).resolve().parents[1] / "db" / "migrations"
COLUMNS = {
    ("files", "status"): Entity.FILE,
    ("large_conversion_jobs", "status"): Entity.JOB,
    ("chunk_jobs", "status"): Entity.CHUNK,
    ("lanes", "state"): Entity.LANE,
    ("batch_members", "state"): Entity.BATCH_MEMBER,
    ("job_retries", "status"): Entity.RETRY,
    ("webhook_deliveries", "status"): Entity.DELIVERY,
    ("folder_jobs", "status"): Entity.FOLDER_JOB,
    ("folder_job_files", "status"): Entity.FOLDER_FILE,
    ("estimates", "status"): Entity.ESTIMATE,
}


def latest_status_checks(folder: Path = MIGRATIONS) -> dict[tuple[str, str], set[str]]:
    """The last ``CHECK (status|state IN (...))`` each table got, reading the migrations in the order they apply;
    a table renamed (``ALTER TABLE a RENAME TO b``, 0045_lanes_table.sql) keeps its checks under its new name."""
    checks: dict[tuple[str, str], set[str]] = {}
    for path in sorted(folder.glob("*.sql")):
        sql = re.sub(r"--[^\n]*", "", path.read_text())
        for statement in sql.split(";"):
            renamed = re.search(r"ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)\s+RENAME\s+TO\s+(\w+)", statement, re.IGNORECASE)
            if renamed:
                old, new = renamed.groups()
                checks = {((new if t == old else t), c): v for (t, c), v in checks.items()}
            table = re.search(r"(?:CREATE|ALTER)\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", statement, re.IGNORECASE)
            for column, values in re.findall(r"CHECK\s*\(\s*(status|state)\s+IN\s*\(([^)]*)\)", statement, re.IGNORECASE):
                assert table is not None, f"{path.name}: a CHECK outside CREATE/ALTER TABLE"
                checks[(table.group(1), column)] = set(re.findall(r"'([^']*)'", values))
    return checks


def reachable(entity: Entity) -> set[str]:
    seen = set(st.INITIAL[entity])
    todo = deque(seen)
    while todo:
        for nxt in st.targets(entity, todo.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_table_agrees_with_the_latest_check_of_every_status_column():
    checks = latest_status_checks()
    assert set(checks) == set(COLUMNS), "a table with a status CHECK is missing from batchlane.domain.status (or gone from the SQL)"
    for column, entity in COLUMNS.items():
        assert checks[column] == {s.value for s in st.STATUSES[entity]}, column


def test_the_check_parser_reads_the_latest_migration(tmp_path):
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE t (\n  status text CHECK (status IN ('a', 'b')) -- ; ignored\n);")
    (tmp_path / "0002_b.sql").write_text("ALTER TABLE t ADD CONSTRAINT t_status_check\n  CHECK (status IN ('a', 'c'));")
    assert latest_status_checks(tmp_path) == {("t", "status"): {"a", "c"}}


def test_the_check_parser_follows_a_renamed_table(tmp_path):
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE old_name (\n  state text CHECK (state IN ('a', 'b'))\n);")
    (tmp_path / "0002_b.sql").write_text("ALTER TABLE old_name RENAME TO new_name;\nALTER TABLE other RENAME COLUMN x TO y;")
    assert latest_status_checks(tmp_path) == {("new_name", "state"): {"a", "b"}}


@pytest.mark.parametrize("entity", list(Entity))
def test_every_status_is_reachable_from_an_initial_one(entity):
    assert reachable(entity) == {s.value for s in st.STATUSES[entity]}


TERMINAL = {
    Entity.FILE: set(),  # a file can always be converted again
    Entity.JOB: {J.FAILED, J.CANCELLED},  # completed is finished, but a retry of its failed pages reopens it
    Entity.CHUNK: {C.CANCELLED},
    Entity.LANE: {B.CLOSED},
    Entity.BATCH_MEMBER: {st.BatchMemberState.COLLECTED, st.BatchMemberState.LEFT},
    Entity.RETRY: {R.COMPLETED, R.FAILED, R.CANCELLED},
    Entity.DELIVERY: {D.DELIVERED, D.FAILED},
    Entity.FOLDER_JOB: set(),  # every end may run again: retry, resume; error (it could not run) lists its folder afresh
    Entity.FOLDER_FILE: {st.FolderFileStatus.COMPLETED},  # failed and skipped files can be retried
    Entity.ESTIMATE: {st.EstimateStatus.COMPLETED, st.EstimateStatus.FAILED},  # answered once
}


@pytest.mark.parametrize("entity", list(Entity))
def test_terminal_states_have_no_exit(entity):
    assert st.terminal(entity) == TERMINAL[entity]
    for t in st.TRANSITIONS:
        if t.entity is entity:
            assert not (t.sources & TERMINAL[entity]), f"{entity}.{t.name} leaves a terminal state"


def test_the_table_names_each_transition_once_and_stays_inside_its_entity():
    names = [(t.entity, t.name) for t in st.TRANSITIONS]
    assert len(names) == len(set(names))
    for t in st.TRANSITIONS:
        allowed = {s.value for s in st.STATUSES[t.entity]}
        assert t.sources and t.sources <= allowed and t.target in allowed, t


FJ, FF = st.FolderJobStatus, st.FolderFileStatus
FOLDER_LIVE = {FJ.ENUMERATING, FJ.PROCESSING}
FOLDER_ENDED = {FJ.COMPLETED, FJ.COMPLETED_WITH_FAILURES, FJ.CANCELLED}
LIVE = {J.SPLITTING, J.PENDING, J.WAITING_BATCH, J.PROCESSING, J.PAUSED_BUDGET, J.ASSEMBLING}
NAMED = [
    # (the function, its from-states, its to-state)
    (st.queue(), {J.SPLITTING}, J.PENDING),
    (st.park(), {J.SPLITTING}, J.WAITING_BATCH),
    (st.claim(), {J.WAITING_BATCH}, J.WAITING_BATCH),
    (st.leave_batch_lane(), {J.WAITING_BATCH}, J.PENDING),
    (st.start(), {J.PENDING, J.PROCESSING}, J.PROCESSING),
    (st.pause_budget(), {J.PROCESSING}, J.PAUSED_BUDGET),
    (st.resume(), {J.PAUSED_BUDGET}, J.PROCESSING),
    (st.assemble(), {J.PROCESSING, J.ASSEMBLING}, J.ASSEMBLING),
    (st.settle(), {J.ASSEMBLING}, J.COMPLETED),
    (st.fail(), LIVE, J.FAILED),
    (st.cancel(), LIVE - {J.ASSEMBLING}, J.CANCELLED),
    (st.retry(), {J.COMPLETED}, J.PENDING),
    (st.end_retry(), {J.PENDING, J.PROCESSING, J.PAUSED_BUDGET, J.ASSEMBLING}, J.COMPLETED),
    (st.leave_batch_lane(Entity.CHUNK), {C.WAITING_BATCH}, C.PENDING),
    (st.start(Entity.CHUNK), {C.PENDING, C.WAITING_BATCH}, C.PENDING),
    (st.claim(Entity.CHUNK), {C.PENDING, C.PROCESSING}, C.PROCESSING),
    (st.resume(Entity.CHUNK), {C.PROCESSING}, C.PENDING),
    (st.complete_chunk(), {C.PROCESSING}, C.COMPLETED),
    (st.fail(Entity.CHUNK), {C.PENDING, C.WAITING_BATCH, C.PROCESSING}, C.FAILED),
    (st.cancel(Entity.CHUNK), {C.PENDING, C.WAITING_BATCH, C.PROCESSING, C.FAILED}, C.CANCELLED),
    (st.retry(Entity.CHUNK), {C.COMPLETED}, C.PENDING),
    (st.end_retry(Entity.CHUNK), {C.PENDING, C.PROCESSING, C.COMPLETED}, C.COMPLETED),
    (st.submit(), {B.PREPARING}, B.SUBMITTED),
    (st.stop(), {B.SUBMITTED}, B.STOPPING),
    (st.leave_before_submit(), {B.PREPARING}, B.CLOSED),
    (st.close(), {B.SUBMITTED}, B.CLOSED),
    (st.settle_stopping(), {B.STOPPING}, B.CLOSED),
    (st.collect_member(), {st.BatchMemberState.PACKED}, st.BatchMemberState.COLLECTED),
    (st.leave_lane(), {st.BatchMemberState.PACKED}, st.BatchMemberState.LEFT),
    (st.convert(), {F.UPLOADED, F.CONVERTED, F.FAILED}, F.CONVERTING),
    (st.reject(), {F.UPLOADED, F.CONVERTED, F.FAILED}, F.FAILED),
    (st.settle(Entity.FILE), {F.CONVERTING}, F.CONVERTED),
    (st.fail(Entity.FILE), {F.CONVERTING}, F.FAILED),
    (st.cancel(Entity.FILE), {F.CONVERTING}, F.UPLOADED),
    (st.retry(Entity.FILE), {F.CONVERTED}, F.CONVERTING),
    (st.end_retry(Entity.FILE), {F.CONVERTING}, F.CONVERTED),
    (st.settle(Entity.RETRY), {R.RUNNING}, R.COMPLETED),
    (st.fail(Entity.RETRY), {R.RUNNING}, R.FAILED),
    (st.cancel(Entity.RETRY), {R.RUNNING}, R.CANCELLED),
    (st.deliver(), {D.PENDING, D.RETRYING}, D.DELIVERED),
    (st.retry_delivery(), {D.PENDING, D.RETRYING}, D.RETRYING),
    (st.give_up_delivery(), {D.PENDING, D.RETRYING}, D.FAILED),
    (st.folder_job("enumerated"), {FJ.ENUMERATING}, FJ.PROCESSING),
    (st.folder_job("complete"), FOLDER_LIVE, FJ.COMPLETED),
    (st.folder_job("complete_with_failures"), FOLDER_LIVE, FJ.COMPLETED_WITH_FAILURES),
    (st.folder_job("cancel"), FOLDER_LIVE, FJ.CANCELLED),
    (st.folder_job("end_cancelled"), {FJ.CANCELLED}, FJ.CANCELLED),
    (st.folder_job("fail"), FOLDER_LIVE, FJ.ERROR),
    (st.folder_job("reopen"), FOLDER_ENDED, FJ.PROCESSING),
    (st.folder_job("reopen_enumeration"), FOLDER_ENDED, FJ.ENUMERATING),
    (st.folder_job("relist"), {FJ.ERROR}, FJ.ENUMERATING),
    (st.folder_file("start"), {FF.QUEUED}, FF.PROCESSING),
    (st.folder_file("requeue"), {FF.PROCESSING}, FF.QUEUED),
    (st.folder_file("retry_conversion"), {FF.PROCESSING}, FF.QUEUED),
    (st.folder_file("complete"), {FF.QUEUED, FF.PROCESSING}, FF.COMPLETED),
    (st.folder_file("fail"), {FF.QUEUED, FF.PROCESSING}, FF.FAILED),
    (st.folder_file("skip"), {FF.QUEUED, FF.PROCESSING}, FF.SKIPPED),
    (st.folder_file("retry"), {FF.FAILED, FF.SKIPPED}, FF.QUEUED),
    (st.estimate("complete"), {st.EstimateStatus.RUNNING}, st.EstimateStatus.COMPLETED),
    (st.estimate("fail"), {st.EstimateStatus.RUNNING}, st.EstimateStatus.FAILED),
]


@pytest.mark.parametrize("move,sources,target", NAMED, ids=[f"{m.entity}.{m.name}" for m, _, _ in NAMED])
def test_each_named_transition_has_its_from_states_and_to_state(move, sources, target):
    assert move.sources == {s.value for s in sources}
    assert move.target == target.value
    assert move.from_states == sorted(move.sources)


def test_every_row_of_the_table_has_its_named_function():
    assert {(m.entity, m.name) for m, _, _ in NAMED} == {(t.entity, t.name) for t in st.TRANSITIONS}


def test_a_job_can_be_cancelled_until_it_assembles_and_failed_until_it_finishes():
    assert st.cancel().allows(J.PAUSED_BUDGET) and st.cancel().allows(J.SPLITTING)
    assert not st.cancel().allows(J.ASSEMBLING)
    assert st.fail().allows(J.ASSEMBLING) and not st.fail().allows(J.COMPLETED)
    assert set(st.LIVE_JOB_STATUSES) | set(st.FINISHED_JOB_STATUSES) == {s.value for s in J}
    assert set(st.LIVE_JOB_STATUSES) == st.fail().sources


def test_a_transition_a_entity_lacks_is_refused():
    with pytest.raises(KeyError):
        st.claim(Entity.LANE)


DB = MIGRATIONS.parent
# ``SET status = 'paused_budget'``: a status written as a literal, which no transition of the table checks.
STATUS_LITERAL_WRITE = re.compile(r"\bSET\b[^;]*?\b(status|state)\s*=\s*'", re.IGNORECASE | re.DOTALL)


@pytest.mark.parametrize("module", sorted(p.name for p in DB.glob("*.py")))
def test_no_db_module_writes_a_status_the_table_does_not_see(module):
    """Every status a repository writes is a transition's target, bound as a parameter (db/jobs.py's move_job,
    db/budgets.py's pause and resume): a status written as a literal is a move domain.status does not check."""
    sql = (DB / module).read_text()
    found = [m.group(0)[-60:] for m in STATUS_LITERAL_WRITE.finditer(sql) if "WHERE" not in m.group(0).upper().split("SET")[-1]]
    assert not found, found
