"""PDF: a template rendered by WeasyPrint, with a matplotlib chart (SVG).

The chart is commission per gaming day against the expected commission and
its 95 % band; floats appear only here, for drawing.
"""

from __future__ import annotations

import base64
import io

from django.template.loader import render_to_string

from .sheets import DECIMAL, FLAG, INT, MONEY, Document, rules_text
from .writers import signer_text


def commission_chart_svg(report) -> str:
    import matplotlib

    matplotlib.use("Agg")  # no display on a worker
    from matplotlib import pyplot as plt

    days = report.days
    # Text stays text (searchable, smaller) rather than glyph outlines.
    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["font.family"] = "DejaVu Sans"
    fig, ax = plt.subplots(figsize=(9, 3.2))
    try:
        x = list(range(len(days)))
        actual = [float(d.commission) for d in days]
        if days:
            # the band behind each day's bar, the expected value as a tick
            low = [float(d.band_low) for d in days]
            high = [float(d.band_high) for d in days]
            ax.bar(x, [h - lo for lo, h in zip(low, high, strict=True)], bottom=low,
                   width=0.9, color="#e3b448", alpha=0.45,
                   label="expected, 95 % band")
        ax.bar(x, actual, color="#0b4d2c", label="commission", width=0.5)
        if days:
            ax.hlines([float(d.expected) for d in days], [i - 0.45 for i in x],
                      [i + 0.45 for i in x], color="#a07400", linewidth=1.5,
                      label="expected")
            step = max(1, len(days) // 12)
            ax.set_xticks(x[::step], [d.label for d in days][::step], rotation=30,
                          ha="right", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no coups in this period", ha="center",
                    transform=ax.transAxes)
        ax.set_ylabel("commission")
        ax.set_title("Commission per gaming day", fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  frameon=False)
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg")
    finally:
        plt.close(fig)
    return out.getvalue()


def _cell(col, value) -> dict:
    if value is None or value == "":
        return {"text": "", "num": False}
    if col.kind == MONEY:
        return {"text": f"{value:,.2f}", "num": True}
    if col.kind == INT:
        return {"text": f"{value:,}", "num": True}
    if col.kind == DECIMAL:
        return {"text": f"{value}", "num": True}
    return {"text": str(value), "num": False, "flag": col.kind == FLAG}


# Columns that name something (a table, a croupier): never broken over lines
# (issue "a real shift", item 16); the numbers' headers wrap instead.
NAME_HEADERS = {"table", "croupier", "table and gaming day", "gaming day", "banker"}


def _names(columns) -> list[bool]:
    return [i == 0 or c.header in NAME_HEADERS for i, c in enumerate(columns)]


def _mark(cells: list[dict], names: list[bool]) -> list[dict]:
    return [{**c, "name": name} for c, name in zip(cells, names, strict=True)]


def render_html(doc: Document, progress=None) -> str:
    chart = None
    if doc.report is not None:
        svg = commission_chart_svg(doc.report).encode()
        chart = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    from .writers import Counter

    count = Counter(progress)
    sheets = []
    for s in doc.sheets:
        names = _names(s.columns)
        sheets.append({
            "name": s.name,
            "headers": [{"text": c.header, "name": name}
                        for c, name in zip(s.columns, names, strict=True)],
            "rows": [_mark([_cell(c, v) for c, v in zip(s.columns, row, strict=True)],
                           names)
                     for row in s.rows],
            "total": (_mark([_cell(c, v)
                             for c, v in zip(s.columns, s.total, strict=True)], names)
                      if s.total is not None else None),
            "wide": len(s.columns) > 10,
        })
        for _ in s.rows:  # the rows are laid out: each one counts
            count.row()
        count.sheet_done()
    return render_to_string("reports/pdf.html", {
        "doc": doc, "stamp": doc.stamp, "sheets": sheets, "chart": chart,
        "rules": [rules_text(r) for r in doc.stamp["house_rules"]],
        "signer": signer_text(doc.stamp),
    })


def write_pdf(doc: Document, path, progress=None) -> int:
    from weasyprint import HTML

    HTML(string=render_html(doc, progress)).write_pdf(str(path))
    return sum(len(s.rows) for s in doc.sheets)
