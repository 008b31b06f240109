"""One definition per repository operation (issue 44.2): a PostgreSQL repository (a ``Pg*`` class in db/) holds its
SQL in its own methods. None only forwards to a module function or another method with its own arguments: such a
method is the same operation written twice (its keyword list too), and the Protocol in batchlane.ports states it a
third time. Read from the source with ``ast``, no import executed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DB = Path(__file__).resolve().parents[2] / "layers" / "batchlane" / "batchlane" / "db"


def _passed_on(node: ast.expr, params: set[str]) -> bool:
    """The method's own parameter, or an attribute of ``self`` (its runner): nothing the method computes."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in params
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def forwarders(source: str) -> list[str]:
    """``Class.method`` for each method of a ``Pg*`` class whose body (its docstring aside) is one call that passes
    on only its own parameters and ``self``'s attributes."""
    found = []
    for cls in ast.parse(source).body:
        if not isinstance(cls, ast.ClassDef) or not cls.name.startswith("Pg"):
            continue
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or method.decorator_list or method.name.startswith("__"):
                continue
            body = method.body[1:] if ast.get_docstring(method) is not None else method.body
            if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)) or not isinstance(body[0].value, ast.Call):
                continue
            call = body[0].value
            arguments = method.args
            params = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs} | {
                a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None
            }
            if all(_passed_on(a, params) for a in call.args) and all(_passed_on(k.value, params) for k in call.keywords):
                found.append(f"{cls.name}.{method.name}")
    return found


def test_no_repository_method_only_forwards() -> None:
    sources = {path.name: path.read_text(encoding="utf-8") for path in sorted(DB.glob("*.py"))}
    assert len([name for name, source in sources.items() if "class Pg" in source]) >= 12, "the repositories were not found"
    found = {name: methods for name, source in sources.items() if (methods := forwarders(source))}
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "class PgJobs:\n    def get_job(self, job_id):\n        return get_job(self.runner, job_id)\n",
        'class PgJobs:\n    def move(self, job_id, move, **fields):\n        """Doc."""\n        return move_job(self._runner, job_id, move=move, **fields)\n',
        "class PgCaps:\n    def count(self, owner_id):\n        self.other(owner_id)\n",
    ],
)
def test_the_rule_fails_on_a_planted_forwarder(source: str) -> None:
    assert forwarders(source)


@pytest.mark.parametrize(
    "source",
    [
        'class PgJobs:\n    def get_job(self, job_id):\n        return _job(self._runner.one("SELECT * FROM j WHERE id = :id", id=job_id))\n',
        "class PgLanes:\n    def by_base(self):\n        return by_base_model(self.in_flight_by_model())\n",
        "class PgUnitOfWork:\n    @property\n    def jobs(self):\n        return PgJobs(self.runner)\n",
        "class Serial:\n    def limiter(self, *, owner):\n        return limiter_for(self._params, owner=owner)\n",
    ],
)
def test_a_method_that_does_its_own_work_breaks_no_rule(source: str) -> None:
    assert forwarders(source) == []
