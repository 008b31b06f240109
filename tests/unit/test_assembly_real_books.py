"""The document pass on what real books give it (issue 39): each problem the issue names, on pages shaped as the
offline model returned them for GeoTopo (py-pdf/sample-files, pdflatex) and libtasn1 (Texinfo), in every form a
model may return a running head. The whole books are measured in tests/integration/test_one_document_corpus.py."""

from __future__ import annotations

import json
import re

import pytest

from batchlane.claude import PageResult
from batchlane.domain.assembly import assemble_document, page_text_blocks, strip_furniture, survey
from batchlane.domain.markdown import PageText
from batchlane.filejob.assemble import page_record

SECTIONS = {7: "1.1. TOPOLOGISCHE RÄUME", 8: "1.1. TOPOLOGISCHE RÄUME", 9: "1.2. METRISCHE RÄUME", 10: "1.2. METRISCHE RÄUME", 11: "1.2. METRISCHE RÄUME"}
BODIES = {
    7: "Sei (X; T) ein topologischer Raum und x2X.",
    8: "Eine Teilmenge U X heißt Umgebung von x, wenn es ein U0 gibt.",
    9: "Also für n = 1: die Standardmetrik auf R.",
    10: "Sei X eine Menge. Eine Abbildung d heißt Metrik, wenn gilt:",
    11: "Beispiel 11 (SNCF-Metrik) zeigt eine andere Metrik.",
}
FORMS = {
    "heading": "## {folio} {title}\n\n{body}",
    "bold": "**{folio} {title}**\n\n{body}",
    "plain": "{folio} {title}\n\n{body}",
    "glued": "{folio} {title} {body}",
    "line-above-the-paragraph": "{folio} {title}\n{body}",
}


def _book(form: str) -> list[PageText]:
    """GeoTopo's pages 7-11: the running head carries the folio (page − 3) and the section's title."""
    return [PageText(n, "converted", FORMS[form].format(folio=n - 3, title=SECTIONS[n], body=BODIES[n])) for n in SECTIONS]


def _assemble(pages: list[PageText]) -> str:
    renumbered = [PageText(k, p.status, p.markdown, p.reason) for k, p in enumerate(pages, start=1)]
    return "".join(assemble_document(renumbered, survey(renumbered), expected_pages=len(renumbered)))


def _sections(document: str) -> dict[int, str]:
    parts = re.split(r"<!-- Page (\d+)[^>]*-->", document)
    return {int(parts[k]): parts[k + 1] for k in range(1, len(parts), 2)}


@pytest.mark.parametrize("form", FORMS)
def test_a_running_head_with_its_folio_and_section_title_is_removed_in_every_form_a_model_returns(form: str) -> None:
    pages = _book(form)
    furniture = survey(pages)

    removed = {p.page_number: strip_furniture(page_text_blocks(p.markdown), p.page_number, furniture)[1] for p in pages}
    document = _assemble(pages)  # the same pages numbered from 1: folio − page stays the same everywhere

    assert all(len(lines) == 1 and f"{n - 3} {SECTIONS[n]}" in lines[0] for n, lines in removed.items()), removed
    assert "TOPOLOGISCHE" not in document and "METRISCHE" not in document
    for n, body in BODIES.items():  # every word of the body kept, under its own page
        assert body.rstrip(":.") in _sections(document)[n - 6]


def test_a_head_glued_to_a_paragraph_that_runs_on_from_the_previous_page_is_not_inside_the_join() -> None:
    # GeoTopo pp. 66-67: "pf = p o <!-- Page 67 --> 64 3.4. GRUPPENOPERATIONEN Beispiel 44" before issue 39
    pages = [
        PageText(1, "converted", "## 60 3.4. GRUPPENOPERATIONEN\n\nEine Gruppe G operiert auf X."),
        PageText(2, "converted", "## 61 3.4. GRUPPENOPERATIONEN\n\nSei X ein Raum.\n\nDann gilt pf = p o"),
        PageText(3, "converted", "62 3.4. GRUPPENOPERATIONEN f für alle f in G. Beispiel 44 Sei X := S2."),
        PageText(4, "converted", "## 63 3.4. GRUPPENOPERATIONEN\n\nFrage: Was ist S2=G?"),
    ]

    document = _assemble(pages)

    assert "Dann gilt pf = p o <!-- Page 3 --> f für alle f in G. Beispiel 44 Sei X := S2." in document
    assert "GRUPPENOPERATIONEN" not in document


def test_a_chapter_running_head_with_a_trailing_folio_is_removed_and_the_chapter_heading_kept() -> None:
    # libtasn1 (Texinfo): "## Chapter 4: Function reference 17" opened page after page
    pages = [PageText(1, "converted", "8\n\n## 4 Function reference\n\nThe functions follow.")]
    pages += [PageText(n, "converted", f"## Chapter 4: Function reference {n + 7}\n\n## asn1 function {n}\n\nIt returns {n}.") for n in range(2, 7)]

    document = _assemble(pages)

    assert "Chapter 4" not in document and "\n8\n" not in document
    assert "## 4 Function reference" in document and all(f"asn1 function {n}" in document for n in range(2, 7))


def test_the_title_pages_of_a_volume_bound_six_times_are_each_kept_under_their_own_marker() -> None:
    book = [
        "## Einführung in die\n\nGeometrie und Topologie 0. Auflage, 31. Dezember 2016 Martin Thoma",
        "## Vorwort\n\nDieses Skript wurde im Wintersemester geschrieben.",
        "## 1 Topologische Grundbegriffe\n\nEin topologischer Raum ist ein Paar.",
        "## 2 1.1. TOPOLOGISCHE RÄUME\n\nEs gibt auch Mengen, die weder offen noch abgeschlossen sind.",
        "## 3 1.1. TOPOLOGISCHE RÄUME\n\nSei X ein topologischer Raum.",
        "## 4 1.1. TOPOLOGISCHE RÄUME\n\nDie Elemente heißen offen.",
    ]
    pages = [PageText(n, "converted", book[(n - 1) % len(book)]) for n in range(1, 6 * len(book) + 1)]

    document = _assemble(pages)

    sections = _sections(document)
    assert [n for n, text in sections.items() if "Einführung in die" in text] == [1, 7, 13, 19, 25, 31]
    assert all("Geometrie und Topologie" in sections[n] for n in (1, 7, 13, 19, 25, 31))
    assert "TOPOLOGISCHE" not in document


def test_definition_and_proof_lines_that_recur_at_page_edges_are_content() -> None:
    # GeoTopo: "## Definition 17" under the head of many pages, "Beweis:" ending some; doc_metrics counts them as heads
    numbers = (17, 20, 26, 27, 31, 33)
    pages = [
        PageText(n, "converted", f"## {n + 10} 2.3. SIMPLIZIALKOMPLEX\n\n## Definition {d}\n\nSatz {n} gilt." + ("\n\nBeweis:" if n in (2, 4, 5) else ""))
        for n, d in enumerate(numbers, start=1)
    ]

    document = _assemble(pages)

    assert all(f"## Definition {d}" in document for d in numbers) and document.count("Beweis:") == 3


def test_a_list_continued_on_the_next_page_leaves_that_pages_text_under_its_own_marker() -> None:
    # The 6×GeoTopo volume: page 27's only block continued page 26's list, and went whole under page 26's marker.
    pages = [
        PageText(1, "converted", "Geben Sie Beispiele für:\n\n1) Ein Homomorphismus, der zugleich ein Homöomorphismus ist\n2) ein Homomorphismus"),
        PageText(2, "converted", "3) ein Homöomorphismus, der kein Homomorphismus ist"),
        PageText(3, "converted", "Aufgabe 6 folgt."),
    ]

    sections = _sections(_assemble(pages))

    assert "3) ein Homöomorphismus, der kein Homomorphismus ist" in sections[2]
    assert "2) ein Homomorphismus" in sections[1] and "3)" not in sections[1]


def test_a_table_continued_on_the_next_page_leaves_that_pages_rows_under_its_own_marker() -> None:
    pages = [PageText(1, "converted", "| a | b |\n|---|---|\n| 1 | 2 |"), PageText(2, "converted", "| a | b |\n|---|---|\n| 3 | 4 |")]

    document = _assemble(pages)

    assert "| 3 | 4 |" in _sections(document)[2] and document.count("|---|---|") == 1


def test_the_lines_removed_from_a_page_are_listed_in_its_pages_jsonl_record() -> None:
    pages = _book("heading")
    furniture = survey(pages)
    result = PageResult(8, "converted", pages[1].markdown, served_by="batch")

    record = page_record(result, [], "book.images", furniture)

    assert record["furniture"] == ["## 5 1.1. TOPOLOGISCHE RÄUME"]
    assert json.loads(json.dumps(record))["markdown"].startswith("## 5 1.1.")  # the page as the model gave it: undoable


def test_a_figure_line_or_a_titled_line_a_bound_volume_repeats_a_book_apart_is_content() -> None:
    """6×GeoTopo: page 35's drawing description and its head glued to labels ("32 2.2. … N S vu (a)
    Kugelkoordinaten 1") stood on six pages a book apart: the first was taken for a logo, the second for a running title."""
    book = [
        "## 30 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN\n\nEine Karte ist ein Homöomorphismus.",
        "## 31 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN\n\nSei M eine Mannigfaltigkeit.",
        "32 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN N S vu (a) Kugelkoordinaten 1\n\nDie Abbildung ist glatt.\n\n*[Figure: vector drawing of 63 shapes]*",
        "## 33 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN\n\nDie Jacobi-Matrix hat vollen Rang.",
        "## 34 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN\n\nWeiter gilt die Kettenregel.",
        "## Lösungen\n\nAufgabe 1 ist gelöst.",
        *[f"Seite {k} des Anhangs hat ihren eigenen Text." for k in range(1, 21)],  # the volume repeats 27 pages apart
    ]
    pages = [PageText(n, "converted", book[(n - 1) % len(book)]) for n in range(1, 6 * len(book) + 1)]

    document = _assemble(pages)

    assert document.count("vector drawing of 63 shapes") == 6 and document.count("N S vu (a) Kugelkoordinaten 1") == 6
    assert "DIFFERENZIERBARE" not in document


def test_a_folio_after_a_running_head_glued_to_the_page_text_goes_with_the_head() -> None:
    # lm-info.pdf (Debian fonts-lmodern), pp. 19-23: the head "…, page N" glued to the table; before, "20 Latin Modern: …" kept N
    head = "The technical documentation of the Latin Modern family of fonts, page"
    tables = {19: "CS (CS TUG)", 20: "EC (Cork aka T1)", 21: "L7X (Lithuanian)", 22: "RM (regular math)", 23: "QX (GUST)"}
    pages = [PageText(n, "converted", f"{head} {n} Latin Modern: {name} encoding table 0 x00 ` 1 x01 ´ 2 x02 ˆ\n\n## 254 xFE þ\n\n255 xFF ß") for n, name in tables.items()]

    sections = _sections(_assemble(pages))

    assert [sections[k].strip().split("\n")[0] for k in range(1, 6)] == [f"Latin Modern: {name} encoding table 0 x00 ` 1 x01 ´ 2 x02 ˆ" for name in tables.values()]
    assert all("## 254 xFE þ" in sections[k] and "255 xFF ß" in sections[k] for k in range(1, 6)), "the table's last rows are content"


def test_a_number_after_a_glued_running_head_that_does_not_follow_the_pages_is_kept() -> None:
    # the same head glued to text opening with a count, not a folio: the count is the paragraph's
    head = "The technical documentation of the Latin Modern family of fonts, page"
    counts = {1: 42, 2: 7, 3: 13, 4: 42, 5: 9}
    pages = [PageText(n, "converted", f"{head} {c} glyphs are shown in table {n}.\n\nMore rows follow.") for n, c in counts.items()]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip().split("\n")[0] for n in counts] == [f"{c} glyphs are shown in table {n}." for n, c in counts.items()]


def test_the_title_of_an_unnumbered_chapter_beside_its_folio_goes_with_the_folio() -> None:
    # GeoTopo pp. 112-117: Symbolverzeichnis and Stichwortverzeichnis head their pages in mixed case beside the folio;
    # before, only the folio went ("Stichwortverzeichnis Homöomorphismengruppe, 10 …" opened page 116)
    pages = [
        PageText(109, "converted", "## 106 Lösungen der Übungsaufgaben\n\nDiese ist f, da x 2 f und f k g."),
        PageText(110, "converted", "## 107 Lösungen der Übungsaufgaben\n\nparallel zu g sein, denn ansonsten gäbe es zwei Parallelen."),
        PageText(111, "converted", "## 108 Lösungen der Übungsaufgaben\n\nEs gilt also die Behauptung."),
        PageText(112, "converted", "## Symbolverzeichnis\n\n## Mengenoperationen Seien A;B und M Mengen.\n\nRg(M) Rang von M"),
        PageText(113, "converted", "110 Symbolverzeichnis k Standard-Simplex X#Y Verklebung von X und Y dn Lineare Abbildung"),
        PageText(114, "converted", "## 111 Symbolverzeichnis\n\n## Zahlenmengen\n\nN = f 1; 2; 3;:::g Natürliche Zahlen"),
        PageText(115, "converted", "Stichwortverzeichnis Abbildung affine, 107 differenzierbare, 29 homotope, 50\n\nHilbert-Kurve, 19, 19"),
        PageText(116, "converted", "113 Stichwortverzeichnis Homöomorphismengruppe, 10 Homöomorphismus, 9 Homologiegruppe, 41\n\nmetrischer, 6"),
        PageText(117, "converted", "114 Stichwortverzeichnis topologischer, 2 zusammenhängender, 11 Realisierung geometrische, 34\n\nZwischenwertsatz, 107"),
    ]

    sections = _sections(_assemble(pages))

    assert sections[5].strip().startswith("k Standard-Simplex X#Y"), sections[5]
    assert sections[8].strip().startswith("Homöomorphismengruppe, 10") and sections[9].strip().startswith("topologischer, 2")
    assert sections[4].strip().startswith("## Symbolverzeichnis") and sections[7].strip().startswith("Stichwortverzeichnis Abbildung affine, 107")


def test_the_running_title_of_the_table_of_contents_goes_from_its_second_page() -> None:
    # GeoTopo pp. 4-5: "2 Inhaltsverzeichnis Stichwortverzeichnis 111" was page 5's whole text; its last entry is content
    pages = [PageText(4, "converted", "## Inhaltsverzeichnis\n\n## 1 Topologische Grundbegriffe 2\n\nSymbolverzeichnis 108")]
    pages += [PageText(5, "converted", "2 Inhaltsverzeichnis Stichwortverzeichnis 111")]
    pages += [PageText(n, "converted", f"## {n - 3} 1.1. TOPOLOGISCHE RÄUME\n\nSei X ein topologischer Raum {n}.") for n in range(6, 10)]

    sections = _sections(_assemble(pages))

    assert sections[2].strip() == "Stichwortverzeichnis 111", sections[2]


def test_a_proof_line_after_a_folio_is_kept_though_an_earlier_page_opened_with_it_as_a_heading() -> None:
    # folios at the top: "## Beweis:" (GeoTopo p. 17 has "## Beweis: durch Widerspruch") opened page 1, and opens page 4
    rest = "und jede offene Überdeckung von X besitzt eine endliche Teilüberdeckung, wie oben gezeigt."
    pages = [PageText(1, "converted", f"## Beweis:\n\nSei X ein Raum {rest}\n\nDann gilt die Aussage.")]
    pages += [PageText(n, "converted", f"{n + 10} Sei Y{n} ein Raum {rest}\n\nEs folgt Satz {n}.") for n in (2, 3)]
    pages += [PageText(4, "converted", f"14 Beweis: Es genügt, Y zu betrachten, {rest}\n\nDas war zu zeigen.")]
    pages += [PageText(n, "converted", f"{n + 10} Sei Z{n} ein Raum {rest}\n\nEs folgt Satz {n}.") for n in (5, 6)]

    sections = _sections(_assemble(pages))

    assert sections[4].strip().startswith("Beweis: Es genügt, Y zu betrachten,"), sections[4]
    assert sections[2].strip().startswith("Sei Y2 ein Raum"), "the folio goes"


# docling's redp5110_sampled.pdf (tests/data/pdf/sources): pages 6-16 of a sample of an IBM Redbook, as the offline
# model returned them. Its folios rise with the page but skip (2, 4, 10, 11, 15, …: pages left out of the sample), so
# no offset from the page number recurs; even pages carry "N Row and Column …" glued to the text, odd ones the chapter.
REDP_PAGES = {
    6: "2 Row and Column Access Control Support in IBM DB2 for i 1.1 Security fundamentals Before reviewing database security techniques, there are",
    7: "4 Row and Column Access Control Support in IBM DB2 for i Many businesses are trying to limit data access to a",
    8: "10 Row and Column Access Control Support in IBM DB2 for i 2.1.6 Change Function Usage CL command The following CL commands",
    9: "## Chapter 2. Roles and separation of duties 11\n\nFor example, assume that a business has assigned the duty to manage security.",
    10: "## Chapter 3. Row and Column Access Control 15\n\nThe SQL CREATE PERMISSION statement that is shown in Figure 3-1 is used.",
    11: "## Chapter 3. Row and Column Access Control 19\n\nTable 3-1 summarizes these special registers and their values.",
    12: "20 Row and Column Access Control Support in IBM DB2 for i Table 3-2 lists the nine built-in global variables.\n\n## Table 3-2   Built-in global variables",
    13: "## Chapter 3. Row and Column Access Control 27\n\n## RETURN",
    14: "28 Row and Column Access Control Support in IBM DB2 for i 3. Figure 3-10 shows the masks that are created in the HR_SCHEMA.",
    16: "124 Row and Column Access Control Support in IBM DB2 for i THEN C . CUSTOMER_TAX_ID WHEN QSYS2 . VERIFY_GROUP_FOR_USER",
}
REDP_LAST = ("Security policies differ.", "Data is an asset.", "Users have profiles.", "", "", "", "Global variables hold values.", "", "Masks hide columns.", "Indexes are advised.", "Tellers see accounts.")
REDP_P15 = "Chapter 4. Implementing Row and Column Access Control: Banking example 77 2. Figure 4-68 shows the Visual Explain"
REDP_BODIES = {
    6: "1.1 Security fundamentals Before reviewing",
    7: "Many businesses are trying",
    8: "2.1.6 Change Function Usage",
    9: "For example, assume that",
    10: "The SQL CREATE PERMISSION",
    11: "Table 3-1 summarizes",
    12: "Table 3-2 lists the nine",
    13: "## RETURN",
    14: "3. Figure 3-10 shows",
    16: "THEN C . CUSTOMER_TAX_ID",
}


def test_the_folios_of_a_sampled_book_that_rise_with_the_page_but_skip_go_with_their_running_heads() -> None:
    pages = [PageText(n, "blank", "") for n in range(1, 6)]
    pages += [PageText(n, "converted", REDP_PAGES.get(n, REDP_P15) + ("" if "\n\n" in REDP_PAGES.get(n, "") else "\n\n" + REDP_LAST[n - 6])) for n in range(6, 17)]
    furniture = survey(pages)

    removed = {p.page_number: strip_furniture(page_text_blocks(p.markdown), p.page_number, furniture)[1] for p in pages}
    sections = {n: text.strip() for n, text in _sections("".join(assemble_document(pages, survey(pages), expected_pages=16))).items()}

    even = [n for n in REDP_PAGES if "Support in IBM DB2 for i" in REDP_PAGES[n]]
    assert {n: removed[n] for n in even} == {n: [REDP_PAGES[n].split(" for i ")[0] + " for i"] for n in even}
    assert all(removed[n] == [REDP_PAGES[n].split("\n")[0]] for n in (9, 10, 11, 13)), removed  # 9: chapter 2's title, once
    assert all(sections[n].startswith(REDP_BODIES[n]) for n in REDP_PAGES), sections
    assert "Support in IBM DB2" not in "".join(sections.values()) and "Chapter 3." not in "".join(sections.values())


def test_numbers_that_rise_at_the_page_edges_of_a_book_without_folios_are_content() -> None:
    # no folio on any page: a definition per page, an equation number at the foot, a numbered step, a table row and a
    # count opening a paragraph all rise with the page and skip, as a sampled book's folios do; none of them is furniture
    pages = [
        PageText(n, "converted", f"## Definition {3 * n + 60}\n\nSei X ein Raum.\n\n{n + 2}. Schritt: wähle U.\n\n| Jahr | {1990 + 7 * n} |\n\n"
                 f"{40 * n} students attended the course in term {n}.\n\n({5 * n + 7})")
        for n in range(1, 8)
    ]

    document = _assemble(pages)

    for n in range(1, 8):
        section = _sections(document)[n]
        for kept in (f"## Definition {3 * n + 60}", f"{n + 2}. Schritt", f"| {1990 + 7 * n} |", f"{40 * n} students", f"({5 * n + 7})"):
            assert kept in section, (n, kept, section)


def test_a_number_that_rises_more_slowly_than_the_pages_is_not_a_sampled_books_folio() -> None:
    # the same words after a number glued to each page's text, the number rising by less than the pages do: a sample
    # leaves pages out, it never numbers two pages alike, so this is the text's count ("7 members of the board …")
    counts = {1: 7, 2: 7, 3: 8, 4: 8, 5: 9, 6: 9}
    text = "{c} members of the board voted for motion {n} at the meeting held in the town hall that week."
    pages = [PageText(n, "converted", text.format(c=c, n=n) + f"\n\nThe minutes of meeting {n} follow.") for n, c in counts.items()]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip().split("\n")[0] for n in counts] == [text.format(c=c, n=n) for n, c in counts.items()]


def test_a_repeated_forms_numbers_beside_the_same_words_are_content_though_some_of_them_rise() -> None:
    # statements bound together: the same words and an account number end each page, no folio anywhere; a few of the
    # numbers rise from page to page by chance (10422 → 23991 → 77310 → 81007), but the form's numbers as a whole do not
    accounts = (58213, 10422, 23991, 77310, 81007, 64420, 12093, 9051)
    pages = [PageText(n, "converted", f"Statement {n} of the period, balance {a % 977} EUR.\n\nCustomer account number {a}") for n, a in enumerate(accounts, start=1)]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip().split("\n")[-1] for n in range(1, 9)] == [f"Customer account number {a}" for a in accounts]


@pytest.mark.parametrize("mark", ["## ", ""])
def test_a_repeated_forms_label_beside_its_value_at_the_top_of_each_page_is_kept_whole(mark: str) -> None:
    # the same label opens every page, its value differs (no folio): before, the label went as a running head glued
    # to the line and "## 58213" was left
    accounts = (58213, 10422, 23991, 77310, 81007, 64420, 12093, 9051)
    pages = [PageText(n, "converted", f"{mark}Customer account number {a}\n\nStatement {n} of the period, balance {a % 977} EUR.") for n, a in enumerate(accounts, start=1)]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip().split("\n")[0] for n in range(1, 9)] == [f"{mark}Customer account number {a}" for a in accounts]


def test_a_foot_whose_folio_rises_from_roman_to_arabic_with_skips_goes_whole() -> None:
    # redp5110_sampled.pdf p. 2: "## © Copyright IBM Corp. 2014. All rights reserved. iii" (a chapter opener's foot,
    # read first); the sample's folios skip and pass from the front matter's roman to arabic. Before, the words went
    # as a running head and "## iii" was left on the page
    folios = ("iii", "v", "xi", "1", "7", "12")
    bodies = ("Contents of the paper.", "Notices and trademarks.", "Preface to the paper.", "Securing the data.", "Roles and duties.", "Access control.")
    pages = [PageText(n, "converted", f"## © Copyright IBM Corp. 2014. All rights reserved. {f}\n\n{bodies[n - 1]}") for n, f in enumerate(folios, start=1)]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip() for n in range(1, 7)] == list(bodies)


def test_a_sampled_books_head_goes_though_a_line_at_the_other_edge_follows_the_pages_by_chance() -> None:
    # GeoTopo sampled as docling samples its books (pages 23-29 of 71): "## Bemerkung 39" at the foot of the page whose
    # head is "42 2.3. SIMPLIZIALKOMPLEX" stands at the offset from the page that the heads of two pages before have,
    # so it passes for that page's folio; the head at the top is still the sample's folio. Before, it was left
    heads = {23: "34 2.2. DIFFERENZIERBARE MANNIGFALTIGKEITEN", 24: "## 35 2.3. SIMPLIZIALKOMPLEX", 25: "## 37 2.3. SIMPLIZIALKOMPLEX",
             26: "## 39 2.3. SIMPLIZIALKOMPLEX", 27: "## 40 2.3. SIMPLIZIALKOMPLEX", 28: "## 42 2.3. SIMPLIZIALKOMPLEX", 29: "## 44 2.3. SIMPLIZIALKOMPLEX"}
    bodies = {n: f"Sei K{n} ein Simplizialkomplex der Dimension {n - 20}." for n in heads}
    pages = [PageText(n - 22, "converted", f"{heads[n]}\n\n{bodies[n]}" + ("\n\n## Bemerkung 39" if n == 28 else "")) for n in heads]

    sections = _sections(_assemble(pages))

    assert [sections[n - 22].strip().split("\n")[0] for n in heads] == list(bodies.values())
    assert sections[6].strip().endswith("## Bemerkung 39")


def test_a_sampled_books_bare_folios_at_the_foot_go() -> None:
    # btxdoc.pdf (texlive's BibTeX manual) sampled two pages in three: its feet are bare folios 5, 7, 8, 10, 12, 13, 15
    # on pages 4-10; no offset recurs, so before, all of them were left as the pages' last paragraphs
    folios = {4: 5, 5: 7, 6: 8, 7: 10, 8: 12, 9: 13, 10: 15}
    words = ("article", "book", "booklet", "conference", "inbook", "manual", "thesis")
    bodies = {n: f"The {w} entry type formats its fields in the order the style gives them." for n, w in zip(folios, words, strict=True)}
    pages = [PageText(n, "blank", "") for n in range(1, 4)] + [PageText(n, "converted", f"{bodies[n]}\n\n{folios[n]}") for n in folios]

    sections = {n: text.strip() for n, text in _sections("".join(assemble_document(pages, survey(pages), expected_pages=10))).items()}

    assert [sections[n] for n in folios] == list(bodies.values())


def test_a_chapter_openers_bare_folio_between_a_sampled_books_heads_goes() -> None:
    # book-headings.pdf (LaTeX book, \\pagestyle{headings}) sampled: the chapter's first page has its folio alone at the
    # foot (9), between the heads' folios 8 and 11; before, "9" was left as that page's last paragraph
    texts = {
        6: "4 CHAPTER 1. OF THE TRANSCENDENTAL AESTHETIC other hand, natural causes can be treated like the Ideal.",
        7: "6 CHAPTER 1. OF THE TRANSCENDENTAL AESTHETIC why, then, the discipline of human reason is a body of demonstrated doctrine.",
        8: "8 CHAPTER 1. OF THE TRANSCENDENTAL AESTHETIC With the sole exception of our understanding, the Ideal is a priori.",
        9: "## Chapter 2\n\n## Of the Transcendental Logic\n\nThe things in themselves are what first give rise to reason.\n\n9",
        10: "## 2.1. ON THE CATEGORIES 11\n\nLet us suppose that the discipline of reason is the clue to the discovery.",
        11: "## 2.1. ON THE CATEGORIES 13\n\nOur knowledge, on the other hand, would be falsified.",
    }
    pages = [PageText(n, "blank", "") for n in range(1, 6)] + [PageText(n, "converted", texts[n]) for n in texts]

    sections = {n: text.strip() for n, text in _sections("".join(assemble_document(pages, survey(pages), expected_pages=11))).items()}

    assert sections[9].endswith("The things in themselves are what first give rise to reason."), sections[9]
    assert all("CHAPTER 1." not in sections[n] and "ON THE CATEGORIES" not in sections[n] for n in texts)


def test_lone_numbers_that_rise_at_the_foot_of_a_few_pages_of_a_book_without_folios_are_content() -> None:
    # a score, a year, a count alone as a page's last paragraph on three pages of ten: a folio stands on nearly every page
    lone = {2: 42, 5: 57, 9: 80}
    pages = [PageText(n, "converted", f"Round {n} of the tournament was played in the old hall of the town." + (f"\n\n{lone[n]}" if n in lone else "")) for n in range(1, 11)]

    sections = _sections(_assemble(pages))

    assert [sections[n].strip().split("\n")[-1] for n in lone] == [str(v) for v in lone.values()]
