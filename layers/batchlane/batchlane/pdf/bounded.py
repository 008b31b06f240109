"""Run one operation on user PDF content in a child process with a deadline and a memory cap.

pdfium parses a page's content in C: nothing in Python can stop it part way, and a 59 KB file can make it
parse 1.5 GB of operators or hold 540 MB (issue 21). The child is forked from a forkserver that already
imported the PDF libraries (a fresh, single-threaded process: safe beside the offline stack's threads, and
~10-30 ms a call); it gets RLIMIT_AS = its own size + ``memory_mb`` and is killed at the deadline. Only a
Pipe crosses the boundary: Lambda has no /dev/shm, so no Queue or Pool (their semaphores need it).
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

_PRELOAD = ["batchlane.pdf.survey", "batchlane.pdf.fit", "batchlane.pdf.images"]
_context_lock = threading.Lock()
_context: Any = None


@dataclass(frozen=True)
class Bound:
    """How long (wall clock) and how much memory beyond its own start one operation may take."""

    seconds: float
    memory_mb: int


class OverBudget(Exception):
    """The operation was stopped: ``reason`` is ``deadline`` (the child was killed) or ``memory`` (its
    allocation failed under RLIMIT_AS, or the kernel killed it)."""

    def __init__(self, reason: str, bound: Bound) -> None:
        super().__init__(f"stopped past its bound ({reason}: {bound.seconds} s, {bound.memory_mb} MB)")
        self.reason = reason
        self.bound = bound


def _forkserver() -> Any:
    global _context
    with _context_lock:
        if _context is None:
            from multiprocessing import forkserver

            # One fork server per process, shared with anything else that uses one (the offline stack's
            # worker pool): add to what it preloads, never replace it.
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(sorted({*forkserver._forkserver._preload_modules, *_PRELOAD}))  # type: ignore[attr-defined]
            _context = context
        return _context


def run_bounded(function: Callable[..., T], *args: Any, bound: Bound) -> T:
    """``function(*args)`` run in a bounded child; its result, or its exception re-raised here.
    ``function`` and its arguments must be picklable (a module-level function, plain values)."""
    receive, send = _forkserver().Pipe(duplex=False)
    child = _forkserver().Process(target=_child, args=(send, bound.memory_mb, function, args), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(bound.seconds):
            child.kill()
            raise OverBudget("deadline", bound)
        try:
            status, value = receive.recv()
        except EOFError:  # died without a word: the kernel's OOM killer, or a crash in C under the cap
            raise OverBudget("memory", bound) from None
    finally:
        receive.close()
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
    if status == "memory":
        raise OverBudget("memory", bound)
    if status == "error":
        raise value
    return value  # type: ignore[no-any-return]


def _child(send: Connection, memory_mb: int, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    size = _own_size_bytes()
    resource.setrlimit(resource.RLIMIT_AS, (size + memory_mb * 1024 * 1024, resource.RLIM_INFINITY))
    try:
        answer: tuple[str, Any] = ("ok", function(*args))
    except MemoryError:
        answer = ("memory", None)
    except Exception as exc:  # re-raised in the parent (InputError keeps its error id)
        answer = ("error", exc)
    try:
        send.send(answer)
    except MemoryError:
        os._exit(3)
    send.close()


def _own_size_bytes() -> int:
    """This process's virtual size (VmSize): RLIMIT_AS bounds the total, the budget is what comes on top."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
