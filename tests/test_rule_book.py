"""The rule book in the repository (docs/rules.md) and the code agree.

- every reference ``docs/rules.md, "Section"`` in the project names a section
  that exists, and each engine module names one;
- nothing refers to a rule book outside the repository;
- the tableau grid, the punter's rule and the findings table are the engine's;
- the house-rule defaults are the model's;
- every worked example settles, with the engine, to the figures it states.
"""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from pathlib import Path

import pytest

from tables import chemmy
from tables.chemmy.stakes import StakeIn, cover_stakes
from tables.chemmy.tableau import STANDARD_TABLEAU, punter_action

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "docs" / "rules.md"
TEXT = BOOK.read_text(encoding="utf-8")
SKIP_DIRS = {".venv", "var", ".git", "node_modules", "__pycache__"}
SOURCE_SUFFIXES = {".py", ".js", ".html", ".md", ".toml", ".txt", ".css"}


def headings() -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#{2,3} (.+)$", TEXT, re.M)}


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", TEXT, re.M | re.S)
    assert m, f"docs/rules.md has no section {title!r}"
    return m.group(1)


def table_rows(block: str, header: bool = False) -> list[list[str]]:
    rows = []
    for line in block.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-| ]+\|$", line):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows if header else rows[1:]


def _skipped(directory: str) -> bool:
    """Environments, caches and outputs (.venv, .hypothesis, var...), not .ci."""
    return directory in SKIP_DIRS or (directory.startswith(".") and directory != ".ci")


def project_files():
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if (
            any(_skipped(p) for p in rel.parts[:-1])
            or path.suffix not in SOURCE_SUFFIXES
        ):
            continue
        # the book itself, and this file (its examples of references)
        if path.is_file() and path not in (BOOK, Path(__file__).resolve()):
            yield rel, path.read_text(encoding="utf-8", errors="replace")


# `docs/rules.md, "A"`, `docs/rules.md, "A" and "B"`, `docs/rules.md, "A", "B"
# and "C"`; a title may run over a line break (and a comment's "#").
TITLE = r'"[^"]{1,60}"'
REFERENCE = re.compile(rf"docs/rules\.md,?\s*((?:{TITLE}(?:,|\s+and)?\s*)+)")


def titles_in(match: re.Match) -> list[str]:
    return [
        " ".join(t.replace("#", " ").split()) for t in re.findall(TITLE, match.group(1))
    ]


def references() -> list[tuple[str, str]]:
    found = []
    for rel, text in project_files():
        for m in REFERENCE.finditer(text):
            for title in titles_in(m):
                found.append((str(rel), title.strip('"')))
    return found


def test_every_reference_names_a_section_that_exists():
    refs = references()
    assert len(refs) >= 15, "the references were not found: the pattern is broken"
    missing = [f"{f}: {t!r}" for f, t in refs if t not in headings()]
    assert not missing, "sections docs/rules.md does not have:\n" + "\n".join(missing)


def test_a_reference_to_a_missing_section_is_caught():
    text = 'see (docs/rules.md, "Outcome" and "The dealer\'s tip")'
    titles = [t.strip('"') for m in REFERENCE.finditer(text) for t in titles_in(m)]
    assert titles == ["Outcome", "The dealer's tip"]
    assert "The dealer's tip" not in headings()


def test_each_engine_module_names_its_section():
    named = {f for f, _ in references()}
    for module in sorted((ROOT / "tables" / "chemmy").glob("*.py")):
        doc = ast.get_docstring(ast.parse(module.read_text())) or ""
        rel = str(module.relative_to(ROOT))
        assert "docs/rules.md" in doc, f"{rel}: its docstring names no rule book"
        if module.name != "__init__.py":
            assert rel in named, f"{rel}: its docstring names no section"


def test_nothing_refers_to_a_rule_book_outside_the_repository():
    outside = [
        f"{rel}: {line.strip()[:90]}"
        for rel, text in project_files()
        for line in text.splitlines()
        if re.search(r"\bRULES\.md\b|shared/(RULES|seeds|DESIGN)", line)
    ]
    assert not outside, "\n".join(outside)


def test_the_tableau_grid_is_the_engines():
    rows = table_rows(section("The banker's tableau"))
    grid = {int(r[0]): "".join(r[1:]) for r in rows}
    assert sorted(grid) == list(range(8))
    for total in range(8):
        engine = "".join(
            str(STANDARD_TABLEAU.banker_action(total, third))
            for third in [None, *range(10)]
        )
        assert grid[total] == engine, (
            f"banker {total}: book {grid[total]}, engine {engine}"
        )


def test_the_punters_rule_is_the_engines():
    totals, rule = table_rows(section("The punter's rule"), header=True)
    assert rule[1:] == [
        "must draw (« carte »)",
        "may draw or stand",
        "must stand (« non »)",
    ]
    draw, optional, stand = ([int(t) for t in cell.split()] for cell in totals[1:4])
    assert {t: str(punter_action(t)) for t in range(8)} == {
        **{t: "D" for t in draw},
        **{t: "O" for t in optional},
        **{t: "S" for t in stand},
    }


def test_the_findings_table_is_the_engines_and_the_audits():
    from audit.services.ledger_flags import LEDGER_CODE

    rows = {r[0].strip("`"): r[1] for r in table_rows(section("Findings"))}
    engine = dict(chemmy.FINDING_SEVERITY) | {LEDGER_CODE: "critical"}
    assert rows == engine


def test_house_rule_defaults_are_the_models():
    from tables.models import HouseRules

    rows = {r[0]: r[2] for r in table_rows(section("House rules"))}
    field = {
        f.name: f.default
        for f in HouseRules._meta.get_fields()
        if hasattr(f, "default")
    }
    assert Decimal(rows["commission rate"]) == field["commission_rate"]
    assert Decimal(rows["commission rounding unit"]) == field["commission_unit"]
    assert int(rows["decks"]) == field["decks"]
    assert Decimal(rows["minimum banco"]) == field["minimum_banco"]
    assert int(rows["gaming-day cut-off"]) == field["gaming_day_cutoff"]
    assert rows["false-draw sanction"] == "none"
    assert field["false_draw_sanction"] == HouseRules.Sanction.NONE
    assert rows["commission rounding mode"] == "half up"


# ---- worked examples --------------------------------------------------------

HOUSE_KEYS = {
    "rate",
    "unit",
    "rounding",
    "cover",
    "tie",
    "maximum_bank",
    "minimum_banco",
}


def examples() -> list[dict[str, str]]:
    out = []
    for block in re.findall(r"```example\n(.*?)```", TEXT, re.S):
        fields = dict(line.split(": ", 1) for line in block.strip().splitlines())
        out.append(fields)
    return out


def amounts(text: str) -> list[Decimal]:
    return [Decimal(a) for a in text.split()]


def settle_example(ex: dict[str, str]):
    house = dict(kv.split("=") for kv in ex["house"].split())
    assert set(house) <= HOUSE_KEYS, f"{ex['name']}: unknown house rule"
    chemmy.TieRule(house.get("tie", "stay"))  # a tie moves no money either way
    # "5=2000.00/banco_solo": seat, amount and (optional) announcement
    stakes = [
        StakeIn(
            amount=Decimal(a.partition("/")[0]),
            seat=int(s),
            announcement=chemmy.Announcement(a.partition("/")[2] or "none"),
        )
        for s, a in (kv.split("=") for kv in ex["stakes"].split())
    ]
    coverage = cover_stakes(
        stakes,
        bank=Decimal(ex["bank"]),
        banker_seat=int(ex["banker_seat"]),
        seats=9,
        minimum_banco=Decimal(house.get("minimum_banco", "100.00")),
        cover=chemmy.Cover(house.get("cover", "partial")).value,
        maximum_bank=(
            Decimal(house["maximum_bank"]) if "maximum_bank" in house else None
        ),
    )
    return coverage, chemmy.settle(
        chemmy.Outcome(ex["outcome"]),
        coverage,
        commission_rate=Decimal(house["rate"]),
        commission_unit=Decimal(house["unit"]),
        rounding=chemmy.rounding_mode(house["rounding"]),
    )


def test_the_book_has_worked_examples():
    names = [ex["name"] for ex in examples()]
    assert len(names) >= 6 and len(set(names)) == len(names)


@pytest.mark.parametrize("ex", examples(), ids=lambda ex: ex["name"])
def test_worked_example_settles_as_the_book_says(ex):
    coverage, s = settle_example(ex)
    assert [c.covered for c in coverage.stakes] == amounts(ex["covered_each"])
    assert s.covered == Decimal(ex["covered"])
    assert s.garage == Decimal(ex["garage"])
    assert s.commission == Decimal(ex["commission"])
    assert s.bank_after == Decimal(ex["carried"])
    assert list(s.payouts) == amounts(ex["payouts"])
    # the book's own arithmetic holds too: covered + garage is the bank
    assert s.covered + s.garage == Decimal(ex["bank"])


def test_a_wrong_figure_in_an_example_fails():
    ex = dict(examples()[0], commission="51.25")
    _, s = settle_example(ex)
    assert s.commission != Decimal(ex["commission"])
