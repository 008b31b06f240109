"""The database's errors as the rest of the package sees them: no pg8000 outside db/."""

from __future__ import annotations

from pg8000.exceptions import DatabaseError, InterfaceError

from batchlane import ports

# What the driver raises when the database is unreachable or refuses a statement.
DATABASE_ERRORS: tuple[type[Exception], ...] = (InterfaceError, DatabaseError)


class UniqueViolation(DatabaseError, ports.UniqueViolation):
    """A unique constraint or index refused the row (SQLSTATE 23505); ``constraint`` names it. Use cases catch
    batchlane.ports.UniqueViolation (the fakes raise that one)."""

    def __init__(self, constraint: str, detail: object) -> None:
        ports.UniqueViolation.__init__(self, constraint, detail)  # args (detail,), as pg8000's error had them


def translated(exc: DatabaseError) -> DatabaseError:
    """``exc`` as a :class:`UniqueViolation` when it is one, else unchanged."""
    info = exc.args[0] if exc.args else None
    if isinstance(exc, UniqueViolation) or not isinstance(info, dict) or info.get("C") != "23505":
        return exc
    return UniqueViolation(str(info.get("n") or ""), info)
