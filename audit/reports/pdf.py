"""PDF: the Document (sheets.py) drawn with fpdf2, with a matplotlib chart.

The same document as the CSV and the XLSX: the stamp's lines are the ones
writers.stamp_lines gives them, each sheet its columns, rows and totals,
each number formatted once here (_cell). The chart is commission per gaming
day against the expected commission and its 95 % band; floats appear only
there, for drawing.

Why not an HTML template and WeasyPrint (until 2026-12): it lays out every
cell as a styled box and breaks its text with Pango, 2-4 ms a cell. A year's
commission report by gaming day (731 rows, 10,000 cells) took 48 s at 1M
coups, the XLSX 0.6 s. Here a table is laid out once: column widths from the
widest text (a name is never broken over lines; a number's header wraps), a
page break where the next row does not fit, the header repeated on each
page, and each cell drawn as one string at its place: about 0.05 ms a cell. The fonts
are the DejaVu Sans that matplotlib ships, so nothing outside Python is
needed.
"""

from __future__ import annotations

import io
from pathlib import Path

from .sheets import DECIMAL, FLAG, INT, MONEY, Document

CHART_TITLE = "Commission per gaming day"
# The least share of its height a chart is drawn at to stay on a page.
CHART_SHRINK = 0.55
CHART_DPI = 200  # sharp when printed (a 9-inch chart: 1,800 pixels wide)


def commission_chart_png(report) -> bytes:
    """The chart as a PNG: WeasyPrint draws an SVG element by element, and a
    year's chart (three shapes a day) cost it 4 s a report, a PNG nothing.
    Each series is one collection (a year's 730 bars as single patches cost
    matplotlib half a second). The title is the page's (an HTML heading above
    the picture, text a reader can search)."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a worker
    from matplotlib import pyplot as plt
    from matplotlib.collections import LineCollection, PolyCollection

    days = report.days
    plt.rcParams["font.family"] = "DejaVu Sans"
    fig, ax = plt.subplots(figsize=(9, 3.2))
    try:
        def bars(low, high, width, **style):
            return PolyCollection(
                [[(i - width / 2, lo), (i + width / 2, lo), (i + width / 2, hi),
                  (i - width / 2, hi)] for i, (lo, hi) in enumerate(zip(low, high,
                                                                        strict=True))],
                **style)

        if days:
            # the band behind each day's bar, the expected value as a tick
            low = [float(d.band_low) for d in days]
            high = [float(d.band_high) for d in days]
            actual = [float(d.commission) for d in days]
            ax.add_collection(bars(low, high, 0.9, facecolor="#e3b448", alpha=0.45,
                                   linewidth=0, label="expected, 95 % band"))
            ax.add_collection(bars([0.0] * len(days), actual, 0.5,
                                   facecolor="#0b4d2c", linewidth=0,
                                   label="commission"))
            ax.add_collection(LineCollection(
                [[(i - 0.45, float(d.expected)), (i + 0.45, float(d.expected))]
                 for i, d in enumerate(days)],
                colors="#a07400", linewidths=1.5, label="expected"))
            top = max([*high, *actual, 0.0])
            bottom = min([*low, *actual, 0.0])
            pad = (top - bottom) * 0.05 or 1.0
            ax.set_xlim(-1, len(days))
            ax.set_ylim(bottom - (pad if bottom < 0 else 0), top + pad)
            x = list(range(len(days)))
            step = max(1, len(days) // 12)
            ax.set_xticks(x[::step], [d.label for d in days][::step], rotation=30,
                          ha="right", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no coups in this period", ha="center",
                    transform=ax.transAxes)
        ax.set_ylabel("commission")
        ax.spines[["top", "right"]].set_visible(False)
        if days:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                      frameon=False)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=CHART_DPI)
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


FONT = "DejaVu"
GREEN, RED, INK, MUTED, RULE = (11, 77, 44), (176, 0, 32), (29, 29, 29), \
    (85, 85, 85), (204, 204, 204)
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 12.0, 14.0, 16.0  # mm
BODY_PT, WIDE_PT, SMALLEST_PT = 8.5, 7.0, 4.5
PAD = 1.5  # mm, either side of a cell's text
PT = 25.4 / 72  # mm per point
MONO_KEYS = {"trail anchor", "trail anchor link", "signature"}
EXPLANATION = (
    "Expected commission = commission rate × P(banker wins) × covered, with P "
    "from the exact odds of each table's decks and tableau; the 95 % band is ± "
    "1.96 standard deviations, from the turnover and the stake mix (Σ covered²). "
    "Cells outside the band are listed for investigation."
)


def _font_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


class _Pdf:
    """An A4 landscape document with the stamp's line and "page N of M" at
    the foot of every page."""

    def __init__(self, doc: Document) -> None:
        from fpdf import FPDF

        stamp = doc.stamp
        foot = (f"{stamp['title']} · {stamp['period']} · generated "
                f"{stamp['generated_at']} by {stamp['generated_by']}")

        class Pages(FPDF):
            def footer(self) -> None:
                self.set_y(-MARGIN_BOTTOM + 6)
                self.set_font(FONT, "", 7)
                self.set_text_color(*MUTED)
                self.cell(0, 4, foot, align="L")
                self.set_x(MARGIN_X)
                self.cell(0, 4, f"page {self.page_no()} of {{nb}}", align="R")

        pdf = Pages(orientation="L", unit="mm", format="A4")
        fonts = _font_dir()
        pdf.add_font(FONT, "", str(fonts / "DejaVuSans.ttf"))
        pdf.add_font(FONT, "B", str(fonts / "DejaVuSans-Bold.ttf"))
        pdf.add_font(FONT, "I", str(fonts / "DejaVuSans-Oblique.ttf"))
        pdf.set_margins(MARGIN_X, MARGIN_TOP, MARGIN_X)
        pdf.set_auto_page_break(True, MARGIN_BOTTOM)
        pdf.set_title(stamp["title"])
        pdf.set_creator(stamp.get("software_version", ""))
        pdf.add_page()
        self.pdf = pdf
        self.width = pdf.w - 2 * MARGIN_X
        self.bottom = pdf.h - MARGIN_BOTTOM

    def room(self, height: float) -> None:
        """A new page unless `height` mm fit on this one."""
        if self.pdf.get_y() + height > self.bottom:
            self.pdf.add_page()

    def heading(self, text: str, size: float, *, before: float) -> None:
        pdf = self.pdf
        self.room(before + size * PT * 1.4 + 12)  # with a little of what follows
        pdf.ln(before)
        pdf.set_font(FONT, "B", size)
        pdf.set_text_color(*GREEN)
        pdf.multi_cell(0, size * PT * 1.3, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1)

    def stamp(self, doc: Document) -> None:
        """The stamp's lines (writers.stamp_lines: what the CSV and XLSX say),
        between two rules; a key once, its values under it."""
        from .writers import stamp_lines

        pdf = self.pdf
        pdf.set_draw_color(*GREEN)
        pdf.set_line_width(0.3)
        pdf.line(MARGIN_X, pdf.get_y(), MARGIN_X + self.width, pdf.get_y())
        pdf.ln(1.5)
        label_w, line_h = 34.0, BODY_PT * PT * 1.35
        previous = None
        lines = stamp_lines(doc.stamp)[1:]
        if not doc.stamp.get("house_rules"):  # said, not left out
            at = max((i + 1 for i, (k, _) in enumerate(lines)
                      if k in ("period", "grouped by")), default=0)
            lines.insert(at, ("house rules", "none"))
        for key, value in lines:
            # digests, links and signatures: long tokens, in small type
            mono = key in MONO_KEYS
            pdf.set_font(FONT, "B", BODY_PT)
            pdf.set_text_color(*INK)
            self.room(line_h)
            y = pdf.get_y()
            if key != previous:
                pdf.cell(label_w, line_h, key[:1].upper() + key[1:])
            pdf.set_xy(MARGIN_X + label_w, y)
            pdf.set_font(FONT, "", 7 if mono else BODY_PT)
            pdf.multi_cell(self.width - label_w, line_h, str(value),
                           new_x="LMARGIN", new_y="NEXT")
            previous = key
        pdf.ln(1)
        pdf.line(MARGIN_X, pdf.get_y(), MARGIN_X + self.width, pdf.get_y())
        pdf.ln(2)

    def chart(self, report) -> None:
        """The chart under its heading, never apart from it. Where the page
        has room for most of it the chart is drawn smaller rather than moved
        on: a first page that ended on the heading after the stamp was two
        thirds blank (issue 35)."""
        pdf = self.pdf
        png = commission_chart_png(report)
        width = self.width
        height = width * 3.2 / 9
        title = 3 + 11 * PT * 1.3 + 1  # heading(): before, its line, after
        room = self.bottom - pdf.get_y() - title
        if room < height * CHART_SHRINK:
            pdf.add_page()
        elif room < height:
            height = room
            width = height * 9 / 3.2
        self.heading(CHART_TITLE, 11, before=3)
        pdf.image(io.BytesIO(png), x=MARGIN_X, y=pdf.get_y(), w=width,
                  h=height)
        pdf.set_y(pdf.get_y() + height + 1)
        pdf.set_font(FONT, "", BODY_PT)
        pdf.set_text_color(*INK)
        pdf.multi_cell(0, BODY_PT * PT * 1.35, EXPLANATION, new_x="LMARGIN",
                       new_y="NEXT")

    def sheet(self, sheet, count) -> None:
        self.heading(sheet.name, 11, before=4)
        if not sheet.rows and sheet.total is None:
            pdf = self.pdf
            pdf.set_font(FONT, "I", BODY_PT)
            pdf.set_text_color(*MUTED)
            pdf.cell(0, BODY_PT * PT * 1.6, "Nothing in this period.",
                     new_x="LMARGIN", new_y="NEXT")
            count.sheet_done()
            return
        _Table(self, sheet).draw(count)


class _Table:
    """One sheet as a table: widths from its widest texts, rows that never
    wrap, the header again at the top of every page."""

    def __init__(self, page: _Pdf, sheet) -> None:
        self.page, self.pdf = page, page.pdf
        columns = sheet.columns
        self.names = _names(columns)
        self.cells = [[_cell(c, v) for c, v in zip(columns, row, strict=True)]
                      for row in sheet.rows]
        self.total = ([_cell(c, v) for c, v in zip(columns, sheet.total,
                                                   strict=True)]
                      if sheet.total is not None else None)
        self.headers = [c.header for c in columns]
        self.size = WIDE_PT if len(columns) > 10 else BODY_PT
        self.widths = self._fit()

    def _widths(self, size: float) -> list[float]:
        pdf = self.pdf
        widest = [0.0] * len(self.headers)
        pdf.set_font(FONT, "", size)
        measure = pdf.get_string_width
        for row in self.cells:
            for i, cell in enumerate(row):
                if cell["text"]:
                    widest[i] = max(widest[i], measure(cell["text"]))
        pdf.set_font(FONT, "B", size)
        for i, cell in enumerate(self.total or []):
            if cell["text"]:
                widest[i] = max(widest[i], measure(cell["text"]))
        for i, header in enumerate(self.headers):
            # a name's header on one line; a number's wraps at its words
            words = [header] if self.names[i] else header.split()
            widest[i] = max([widest[i], *(measure(w) for w in words)])
        return [w + 2 * PAD for w in widest]

    def _fit(self) -> list[float]:
        """Widths at the sheet's size, stretched to the page's width; a sheet
        too wide for the page is set smaller until it fits."""
        widths = self._widths(self.size)
        total = sum(widths)
        if total > self.page.width:
            self.size = max(SMALLEST_PT, self.size * self.page.width / total * 0.98)
            widths = self._widths(self.size)
            total = sum(widths)
        extra = max(self.page.width - total, 0.0) / len(widths)
        return [w + extra for w in widths]

    @property
    def row_h(self) -> float:
        return self.size * PT * 1.25 + 1.8

    def _header_lines(self) -> list[list[str]]:
        pdf = self.pdf
        pdf.set_font(FONT, "B", self.size)
        out = []
        for i, header in enumerate(self.headers):
            if self.names[i]:
                out.append([header])
                continue
            lines, line = [], ""
            for word in header.split():
                trial = f"{line} {word}".strip()
                if line and pdf.get_string_width(trial) > self.widths[i] - 2 * PAD:
                    lines.append(line)
                    line = word
                else:
                    line = trial
            out.append([*lines, line] if line else lines or [""])
        return out

    def _header(self) -> None:
        pdf = self.pdf
        lines = self._head
        line_h = self.size * PT * 1.25
        height = max(len(x) for x in lines) * line_h + 2.4
        x, y = MARGIN_X, pdf.get_y()
        pdf.set_fill_color(*GREEN)
        pdf.rect(x, y, sum(self.widths), height, style="F")
        pdf.set_font(FONT, "B", self.size)
        pdf.set_text_color(255, 255, 255)
        for i, w in enumerate(self.widths):
            top = y + height - 1.2 - len(lines[i]) * line_h  # at the bottom
            for n, text in enumerate(lines[i]):
                pdf.set_xy(x + PAD, top + n * line_h)
                pdf.cell(w - 2 * PAD, line_h, text,
                         align="L" if self.names[i] else "R")
            x += w
        pdf.set_xy(MARGIN_X, y + height)

    def _row(self, cells: list[dict], *, bold: bool) -> None:
        pdf = self.pdf
        h = self.row_h
        y = pdf.get_y()
        if bold:
            pdf.set_draw_color(*INK)
            pdf.set_line_width(0.35)
            pdf.line(MARGIN_X, y, MARGIN_X + sum(self.widths), y)
        x = MARGIN_X
        style = "B" if bold else ""
        pdf.set_font(FONT, style, self.size)
        pdf.set_text_color(*INK)
        # text() puts a string at a baseline: half the cost of cell(), which
        # handles wrapping, links and markup a number never has
        baseline = y + h / 2 + 0.35 * self.size * PT
        measure = pdf.get_string_width
        for cell, w in zip(cells, self.widths, strict=True):
            text = cell["text"]
            if text:
                flag = cell.get("flag")
                if flag:
                    pdf.set_font(FONT, "B", self.size)
                    pdf.set_text_color(*RED)
                left = x + w - PAD - measure(text) if cell["num"] else x + PAD
                pdf.text(left, baseline, text)
                if flag:
                    pdf.set_font(FONT, style, self.size)
                    pdf.set_text_color(*INK)
            x += w
        if not bold:
            pdf.set_draw_color(*RULE)
            pdf.set_line_width(0.1)
            pdf.line(MARGIN_X, y + h, MARGIN_X + sum(self.widths), y + h)
        pdf.set_xy(MARGIN_X, y + h)

    def draw(self, count) -> None:
        pdf, page = self.pdf, self.page
        self._head = self._header_lines()
        header_h = max(len(x) for x in self._head) * self.size * PT * 1.25 + 2.4
        pdf.set_auto_page_break(False)  # the rows decide where a page ends
        try:
            page.room(header_h + self.row_h)
            self._header()
            for cells in self.cells:
                if pdf.get_y() + self.row_h > page.bottom:
                    pdf.add_page()
                    self._header()
                self._row(cells, bold=False)
                count.row()
            if self.total is not None:
                if pdf.get_y() + self.row_h > page.bottom:
                    pdf.add_page()
                    self._header()
                self._row(self.total, bold=True)
        finally:
            pdf.set_auto_page_break(True, MARGIN_BOTTOM)
        count.sheet_done()


def write_pdf(doc: Document, path, progress=None) -> int:
    from .writers import Counter

    count = Counter(progress)
    page = _Pdf(doc)
    pdf = page.pdf
    pdf.set_font(FONT, "B", 16)
    pdf.set_text_color(*GREEN)
    pdf.multi_cell(0, 16 * PT * 1.3, doc.stamp["title"], new_x="LMARGIN",
                   new_y="NEXT")
    pdf.ln(1)
    page.stamp(doc)
    if doc.report is not None:
        page.chart(doc.report)
    for sheet in doc.sheets:
        page.sheet(sheet, count)
    pdf.output(str(path))
    return sum(len(s.rows) for s in doc.sheets)
