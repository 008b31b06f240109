"""Folder-job specs and output keys: pure rules, checked without any AWS or database."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from batchlane.domain.errors import InputError
from batchlane.folders import layout
from batchlane.folders.layout import common_folder, document_id
from batchlane.folders.spec import FolderJobSpec, check_allowed, check_folder_job_id, folder_job_id, normalise, parse_spec

FOLDER = "s3://docs/legal/"


def spec(**extra):  # type: ignore[no-untyped-def]
    return parse_spec({"input": {"folder": FOLDER}, **extra})


def test_defaults_are_filled_in_and_the_id_is_stable_under_reordering() -> None:
    a = parse_spec({"input": {"folder": FOLDER, "exclude": ["b*", "a*"]}, "name": "one"})
    b = parse_spec({"input": {"folder": FOLDER, "exclude": ["a*", "b*", "a*"]}, "name": "two"})
    assert a.output.folder == FOLDER and a.output.layout == "alongside" and a.output.on_existing == "skip"
    assert a.input.recursive is True and a.policy.priority == "normal"
    # PDFs and the born-digital types (no model call for their text); pictures only when asked (issue 43)
    assert a.input.include == ["*.docx", "*.epub", "*.htm", "*.html", "*.odt", "*.pdf", "*.pptx", "*.xhtml", "*.xlsm", "*.xlsx"]
    job_id = folder_job_id(a, "alice")
    assert job_id == folder_job_id(b, "alice")  # names are labels; glob order is not meaning
    assert job_id.startswith("fj-") and len(job_id) == 27
    assert job_id != folder_job_id(a, "bob")
    assert job_id != folder_job_id(spec(output={"onExisting": "replace"}), "alice")


@pytest.mark.parametrize(
    ("body", "error_id"),
    [
        ({"input": {"folder": "s3://docs/legal"}}, "FOLDER_URI_NO_SLASH"),
        ({"input": {"folder": "/tmp/x/"}}, "FOLDER_URI_INVALID"),
        ({"input": {"folder": FOLDER, "files": ["s3://docs/a.pdf"]}}, "SPEC_INVALID"),
        ({"input": {}}, "SPEC_INVALID"),
        ({"input": {"folder": FOLDER}, "output": {"folder": "s3://docs/out/"}}, "SPEC_INVALID"),  # alongside elsewhere
        ({"input": {"folder": FOLDER}, "output": {"layout": "mirror"}}, "SPEC_INVALID"),  # mirror onto itself
        ({"input": {"folder": FOLDER}, "options": {"_batchLane": True}}, "SPEC_INVALID"),
        ({"input": {"files": ["s3://a/x.pdf", "s3://b/y.pdf"]}, "output": {"layout": "flat", "folder": "s3://a/o/"}}, "SPEC_INVALID"),
    ],
)
def test_bad_specs_get_an_error_id(body: dict, error_id: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InputError) as err:
        parse_spec(body)
    assert err.value.error_id == error_id


def test_a_files_list_lists_their_common_folder_and_outputs_default_there() -> None:
    s = parse_spec({"input": {"files": ["s3://docs/a/x/2.pdf", "s3://docs/a/y/1.pdf", "s3://docs/a/x/2.pdf"]}})
    assert s.input.files == ["s3://docs/a/x/2.pdf", "s3://docs/a/y/1.pdf"]
    assert str(s.input_uri) == "s3://docs/a/" and s.output.folder == "s3://docs/a/"


def test_folders_outside_the_configured_sources_are_refused() -> None:
    check_allowed(spec(), ["docs/legal/"], owner_id="alice")
    check_allowed(spec(), ["docs/"], owner_id="alice")
    for sources in ([], ["docs/other/"], ["other/legal/"]):
        with pytest.raises(InputError) as err:
            check_allowed(spec(), sources, owner_id="alice")
        assert err.value.error_id == "FOLDER_NOT_ALLOWED"
    mirrored = spec(output={"layout": "mirror", "folder": "s3://elsewhere/out/"})
    with pytest.raises(InputError):
        check_allowed(mirrored, ["docs/legal/"], owner_id="alice")  # the output folder must be allowed too


def _refused(body: dict, owner: str, groups: tuple[str, ...] = ()) -> bool:  # type: ignore[type-arg]
    try:
        check_allowed(parse_spec(body), ["home/users/{owner}/", "legal@docs/legal/"], owner_id=owner, groups=groups)
    except InputError as exc:
        assert exc.error_id == "FOLDER_NOT_ALLOWED"
        return True
    return False


def test_an_owner_grant_gives_each_user_their_own_prefix_and_never_anothers() -> None:
    alice_home = {"input": {"folder": "s3://home/users/alice/papers/"}}
    assert not _refused(alice_home, "alice")
    assert _refused(alice_home, "bob")  # bob on alice's prefix: refused before anything is listed
    assert _refused({"input": {"folder": "s3://home/users/alice-2/"}}, "alice")  # a longer sub is another folder
    assert _refused({"input": {"folder": "s3://home/users/bob/"}, "output": {"layout": "mirror", "folder": "s3://home/users/alice/out/"}}, "bob")
    assert _refused({"input": {"files": ["s3://home/users/alice/a.pdf"]}}, "bob")
    assert _refused({"input": {"folder": "s3://home/users/"}}, "alice")  # the parent holds everybody's


def test_a_group_grant_admits_its_members_only_and_an_owner_id_unfit_for_a_key_gets_no_home() -> None:
    legal = {"input": {"folder": "s3://docs/legal/contracts/"}}
    assert not _refused(legal, "carol", ("legal",))
    assert _refused(legal, "dave", ("sales",))
    assert _refused({"input": {"folder": "s3://home/users/x/"}}, "x/../alice") and _refused({"input": {"folder": "s3://home/users/a/"}}, "a\x00")


@pytest.mark.parametrize(
    "options",
    [
        {"parser": "x" * 1_000_000},  # was accepted and copied to every file's job
        {"unknownKey": True},
        {"modelId": "m" * 300},
        {"callbackHeaders": {f"h{i}": "v" for i in range(11)}},
        {"highFidelity": "very"},
    ],
)
def test_folder_options_are_known_keys_each_bounded(options: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(InputError) as err:
        parse_spec({"input": {"folder": FOLDER}, "options": options})
    assert err.value.error_id == "SPEC_INVALID"
    assert parse_spec({"input": {"folder": FOLDER}, "options": {"highFidelity": False, "parser": "auto"}}).options == {"highFidelity": False, "parser": "auto"}


@pytest.mark.parametrize(
    ("layout_name", "out", "expected"),
    [
        ("alongside", "legal/", "legal/a/doc.md"),
        ("mirror", "md/", "md/a/doc.md"),
        ("flat", "md/", "md/doc/doc.md"),
    ],
)
def test_layouts(layout_name: layout.Layout, out: str, expected: str) -> None:
    assert layout.output_key("legal/a/doc.pdf", input_prefix="legal/", output_prefix=out, layout=layout_name) == expected


def test_an_output_never_lands_on_an_input() -> None:
    inputs = {"legal/doc.md.pdf", "legal/doc.md"}
    # a source named without a .pdf extension whose output would be another input's key
    key = layout.output_key("legal/doc", input_prefix="legal/", output_prefix="legal/", layout="alongside", is_input=inputs.__contains__)
    assert key == "legal/doc.converted.md"
    assert layout.output_key("x/a.md", input_prefix="x/", output_prefix="x/", layout="alongside") == "x/a.converted.md"


def test_our_own_outputs_are_never_inputs() -> None:
    assert layout.is_own_output("legal/a/doc.md")
    assert layout.is_own_output("legal/_batchlane/fj-0/report.jsonl")
    assert layout.is_own_output("_batchlane/fj-0/manifest.json")
    assert not layout.is_own_output("legal/a/doc.pdf")
    assert not layout.is_own_output("legal/not_batchlane/doc.pdf")
    assert layout.manifest_key("legal/", "fj-1") == "legal/_batchlane/fj-1/manifest.json"
    assert layout.report_key("", "fj-1") == "_batchlane/fj-1/report.jsonl"


def test_globs_match_below_the_folder_case_insensitively() -> None:
    assert layout.matches("a/Doc.PDF", ["*.pdf"], [])
    assert not layout.matches("a/doc.txt", ["*.pdf"], [])
    assert not layout.matches("drafts/doc.pdf", ["*.pdf"], ["drafts/*"])
    assert layout.matches("a/b/doc.pdf", ["a/*"], [])
    assert not layout.matches("a/secret.pdf", ["*.pdf"], ["secret*"])


def test_eta_waits_for_the_listing_and_enough_pages_then_follows_the_pace() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    from batchlane.folders.usecases import pace
    from batchlane.rows import FolderCounts
    from fakes import FakeUnitOfWork

    started = datetime.now(UTC) - timedelta(minutes=2)
    added = FakeUnitOfWork().folder_jobs.add(job_id="fj-" + "1" * 24, owner_id="u", name=None, spec={}, source=("b", ""), target=("b", ""))
    assert added is not None
    job = replace(added, created_at=started)
    counts = FolderCounts(discovered=10, queued=4, processing=2, completed=4, failed=0, skipped=0, pages_completed=40, pages_failed=0, cost_usd=0.0)
    throughput, eta = pace(job, counts)
    assert throughput is not None and 19 < throughput < 21 and eta is None  # still listing: no ETA yet
    throughput, eta = pace(replace(job, enumeration_done=True), counts)
    assert eta is not None and 170 < eta < 190  # 6 files x 10 pages left at ~20 pages/min
    assert pace(replace(job, enumeration_done=True), replace(counts, pages_completed=5, completed=1))[1] is None  # too few pages to mean much
    assert pace(replace(job, finished_at=datetime.now(UTC)), counts)[1] == 0


def test_a_listed_page_is_classified_without_taking_our_own_outputs() -> None:
    from batchlane.folders.enumerate import classify

    s = parse_spec({"input": {"folder": FOLDER, "include": ["*.pdf", "*.txt"], "exclude": ["drafts/*"]}})
    page = [
        ("legal/", 0),  # the folder marker
        ("legal/a.pdf", 10),
        ("legal/a.md", 5),  # our output of an earlier run
        ("legal/_batchlane/fj-0/report.jsonl", 5),
        ("legal/drafts/b.pdf", 10),
        ("legal/notes.txt", 3),
        ("legal/done.pdf", 10),
        ("legal/photo.jpg", 7),
    ]
    found = classify(s, "fj-x", page, done_sources={"legal/done.pdf"})
    assert found.excluded == 2  # drafts/b.pdf, photo.jpg
    assert [(f.source_key, f.status, f.error_id, f.output_key) for f in found.files] == [
        ("legal/a.pdf", "queued", None, "legal/a.md"),
        ("legal/notes.txt", "failed", "FILE_TYPE_UNSUPPORTED", "legal/notes.md"),
        ("legal/done.pdf", "skipped", "ALREADY_CONVERTED", "legal/done.md"),
    ]


def test_the_report_stream_reads_back_exactly_what_was_yielded() -> None:
    from batchlane.aws.folders import _ChunkReader

    chunks = [b"a" * 5, b"", b"b" * 3, b"c" * 10]
    reader = _ChunkReader(iter(chunks))
    parts = [reader.read(4) for _ in range(6)]
    assert b"".join(parts) == b"".join(chunks) and parts[-1] == b""
    assert _ChunkReader(iter(chunks)).read() == b"".join(chunks)


def test_the_common_folder_of_keys_is_the_deepest_whole_folder_holding_them_all() -> None:
    assert common_folder(["a/b/c/1.pdf", "a/b/c/2.pdf"]) == "a/b/c/"
    assert common_folder(["a/bc/1.pdf", "a/bd/2.pdf"]) == "a/"  # a common prefix "a/b" is not a folder
    assert common_folder(["a/b/1.pdf", "2.pdf"]) == ""  # one at the bucket's top
    assert common_folder(["only.pdf"]) == "" and common_folder([]) == ""
    assert (document_id("in/book.v2.pdf"), document_id("in/.pdf"), document_id("in/noext")) == ("book.v2", ".pdf", "noext")
    assert document_id("in/") == "document"


# -- each refusal of a posted spec, with its id and its words (issue 44.6: their mutants survived) --------------------
@pytest.mark.parametrize(
    ("body", "error_id", "message"),
    [
        ({"input": {"folder": "http://docs/in/"}}, "FOLDER_URI_INVALID", "input.folder must be an s3://bucket/folder/ URI: not an s3:// URI: 'http://docs/in/'."),
        ({"input": {"files": ["s3://docs/a.pdf", "docs/b.pdf"]}}, "FOLDER_URI_INVALID", "input.files must be an s3://bucket/folder/ URI: not an s3:// URI: 'docs/b.pdf'."),
        ({"input": {"folder": "s3://docs/in/"}, "output": {"folder": "s3:///out/"}}, "FOLDER_URI_INVALID", "output.folder must be an s3://bucket/folder/ URI: no bucket in 's3:///out/'."),
        ({"input": {"folder": "s3://docs/in"}}, "FOLDER_URI_NO_SLASH", "input.folder s3://docs/in must end with '/': a folder, not an object."),
        ({"input": {"folder": "s3://docs/in/"}, "output": {"folder": "s3://docs/out", "layout": "mirror"}}, "FOLDER_URI_NO_SLASH", "output.folder s3://docs/out must end with '/': a folder, not an object."),
        ({"input": {"files": []}}, "SPEC_INVALID", "input.files is empty."),
        ({"input": {"files": ["s3://docs/in/"]}}, "FOLDER_URI_INVALID", "input.files: s3://docs/in/ names a folder, not an object."),
        ({"input": {"files": ["s3://docs"]}}, "FOLDER_URI_INVALID", "input.files: s3://docs names a folder, not an object."),
        ({"input": {"files": ["s3://docs/a.pdf", "s3://other/b.pdf"]}}, "SPEC_INVALID", "input.files must all be in one bucket."),
        ({"input": {"folder": "s3://docs/in/"}, "options": {"x\x00": True}}, "SPEC_INVALID", "spec.options holds a NUL character."),
        ({"input": {"folder": "s3://docs/in/", "include": ["*.pdf", "a\x00"]}}, "SPEC_INVALID", "spec.input.include[1] holds a NUL character."),
        ({"input": {"folder": "s3://docs/in/"}, "output": {"layout": "mirror"}}, "SPEC_INVALID", "layout mirror needs an output.folder other than the input folder (or use alongside)."),
        ([], "SPEC_INVALID", None),
    ],
)  # fmt: skip
def test_each_refusal_of_a_spec_names_its_id_and_where_it_is(body: Any, error_id: str, message: str | None) -> None:
    with pytest.raises(InputError) as refused:
        parse_spec(body)
    assert refused.value.error_id == error_id
    if message is not None:
        assert str(refused.value) == message
    else:
        assert str(refused.value).startswith("spec")


def test_normalising_a_spec_never_changes_the_spec_it_was_given() -> None:
    given = FolderJobSpec.model_validate({"input": {"folder": "s3://docs/in/", "include": ["*.pdf", "*.pdf"]}})
    normalised = normalise(given)
    assert normalised.input.include == ["*.pdf"] and normalised.output.folder == "s3://docs/in/"
    assert given.input.include == ["*.pdf", "*.pdf"] and given.output.folder is None


def test_the_same_spec_is_the_same_job_whatever_its_name_notifications_or_key_order() -> None:
    base = {
        "input": {"folder": "s3://docs/in/"},
        "output": {"layout": "mirror", "folder": "s3://docs/out/"},
        "options": {"highFidelity": True, "parser": "auto"},
    }
    job_id = folder_job_id(parse_spec(base), "alice")
    assert re.fullmatch(r"fj-[0-9a-f]{24}", job_id)
    renamed = {**base, "name": "again", "notifications": {"callbackUrl": "https://hooks.example.com/x"}, "options": {"parser": "auto", "highFidelity": True}}
    assert folder_job_id(parse_spec(renamed), "alice") == job_id
    assert folder_job_id(parse_spec({**base, "options": {"highFidelity": False}}), "alice") != job_id
    assert folder_job_id(parse_spec(base), "bob") != job_id
    assert parse_spec(base).canonical_json() == json.dumps(
        parse_spec(base).model_dump(mode="json", exclude={"name", "notifications"}), sort_keys=True, separators=(",", ":")
    )


@pytest.mark.parametrize("job_id", ["fj-" + "0" * 23, "fj-" + "A" * 24, "fj-" + "0" * 25, "xj-" + "0" * 24, "fj-" + "0" * 23 + "\x00"])
def test_a_folder_job_id_is_fj_and_24_lowercase_hex_digits(job_id: str) -> None:
    assert check_folder_job_id("fj-" + "0a" * 12) == "fj-" + "0a" * 12
    with pytest.raises(InputError) as refused:
        check_folder_job_id(job_id)
    assert (refused.value.error_id, str(refused.value)) == ("FOLDER_JOB_ID_INVALID", "A folder job id is fj- and 24 hex digits.")
