"""Free text in a spreadsheet file is shown, never run (CSV/formula injection).

A spreadsheet program opening a CSV runs a cell that starts with `=`, `+`,
`-` or `@` as a formula (a tab or a carriage return in front of one does not
stop some of them): a table named `=HYPERLINK("http://x","y")` or a user
named `@SUM(1)` would run on the auditor's machine. OWASP's rule: such a
value is written with a single quote in front, which the program shows as
text. Every CSV and XLSX writer of the project passes each free-text value
(names of tables, users and tableaux, anything a person typed) through
`neutralise`; numbers are written as numbers, never through it, so -490.00
stays -490.00. The XLSX writer also writes text as strings, never formulas.

The coup detail export builds its CSV lines in PostgreSQL: `neutralise_sql`
is the same rule in SQL, built from the same characters, so both paths give
the same bytes (tests/reports/test_detail_csv.py).
"""

from __future__ import annotations

# The first characters that make a cell a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """`text` as a spreadsheet must show it: a quote in front of a formula."""
    return "'" + text if text.startswith(FORMULA_START) else text


def cell_text(value) -> str:
    """A value as the text of a CSV cell: nothing for None, text neutralised,
    a number (int, Decimal) as its exact text, untouched."""
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralise(value)
    return str(value)


def neutralise_sql(column: str) -> str:
    """`neutralise` in PostgreSQL, for a text expression (NULL stays NULL).
    ascii() reads the first character's code, 0 for an empty text."""
    codes = ", ".join(str(ord(c)) for c in FORMULA_START)
    return (f"CASE WHEN ascii({column}) IN ({codes}) THEN '''' || {column} "
            f"ELSE {column} END")
