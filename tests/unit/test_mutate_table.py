"""devtools/mutate/table.py: the per-module table of a `make mutate` run, counted as mutmut counts."""

import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location("mutate_table", Path(__file__).resolve().parents[2] / "devtools" / "mutate" / "table.py")
assert _spec is not None and _spec.loader is not None
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def test_each_modules_mutants_are_counted_by_status_and_totalled(tmp_path):
    (tmp_path / "batchlane" / "domain").mkdir(parents=True)
    codes = {"a": {"m1": 1, "m2": 0, "m3": 36, "m4": 3}, "b": {"m1": 33, "m2": 1}, "empty": {}}
    for name, by_key in codes.items():
        (tmp_path / "batchlane" / "domain" / f"{name}.py.meta").write_text(json.dumps({"exit_code_by_key": by_key}))
    counted = table.counts(tmp_path)
    assert list(counted) == ["batchlane/domain/a.py", "batchlane/domain/b.py"]  # a module with no mutants has no row
    assert counted["batchlane/domain/a.py"] == {"killed": 2, "survived": 1, "timeout": 1}
    text = table.markdown(counted)
    assert "| `batchlane/domain/a.py` | 4 | 2 | 1 | 1 | 0 |" in text
    assert "| `batchlane/domain/b.py` | 2 | 1 | 0 | 0 | 1 |" in text
    assert "| **all** | 6 | 3 | 1 | 1 | 1 |" in text
    assert text.endswith("3 of 6 killed: 50.0%")


_cfg_spec = importlib.util.spec_from_file_location("mutate_config", Path(__file__).resolve().parents[2] / "devtools" / "mutate" / "config.py")
assert _cfg_spec is not None and _cfg_spec.loader is not None
config = importlib.util.module_from_spec(_cfg_spec)
_cfg_spec.loader.exec_module(config)


def _only_mutate(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("only_mutate =")
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        out.append(line.strip())
    return out


def test_make_mutate_covers_the_newest_packages_and_mutate_paths_narrows_it_to_one() -> None:
    template = config.TEMPLATE.read_text()
    whole = config.render(template, "/checkout", [])
    assert "@ROOT@" not in whole and "/checkout/tests/unit" in whole
    assert {"batchlane/api/*", "batchlane/webhooks/*", "batchlane/folders/*", "batchlane/filejob/figures.py", "batchlane/filejob/service_tier_choice.py",
            "batchlane/filejob/assemble.py", "batchlane/ondemand/governed.py", "batchlane/ondemand/planner.py", "batchlane/domain/*"} <= set(_only_mutate(whole))  # fmt: skip
    one = config.render(template, "/checkout", ["batchlane/api/*"])
    assert _only_mutate(one) == ["batchlane/api/*"]
    assert one.replace("    batchlane/api/*\n", "") == whole.replace("".join(f"    {p}\n" for p in _only_mutate(whole)), "")  # nothing else changed
