"""The PDF keeps each table's name on one line (issue "a real shift", item
16): the name column does not wrap, however many columns the sheet has."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from audit.reports.services import report_request
from tables.models import Table

from .conftest import DAY1, DAY2, play

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.poppler,
]


def test_table_names_stay_on_one_line(croupier, manager,
                                      django_capture_on_commit_callbacks):
    # many finding codes make the widest sheet; long names as casinos give them
    play(croupier, DAY1, tables=3, shoes=1, seed=3, rate=0.08,
         prefix="Salon Privé Grand Baccara")
    play(croupier, DAY2, tables=1, shoes=1, seed=4, rate=0.08,
         prefix="Salle Européenne Chemin de Fer")
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="commission", format="pdf",
                             from_day=DAY1, to_day=DAY2, group_by="table")
    job.refresh_from_db()
    assert job.status == "done", job.error
    path = Path(settings.MEDIA_ROOT) / job.file
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"],
                          capture_output=True, text=True, check=True).stdout
    # the sheet's rows, from its header line to its totals (the stamp above
    # lists the tables' house rules: names there prove nothing)
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines)
               if "banker wins" in line and "commission" in line)
    bottom = next(i for i in range(top, len(lines))
                  if lines[i].strip().startswith("Total"))
    sheet = "\n".join(lines[top:bottom])
    names = list(Table.objects.values_list("name", flat=True))
    assert len(names) == 4
    for name in names:
        assert name in sheet, f"{name!r} is broken over lines in the PDF"
    out = Path(settings.BASE_DIR) / "var" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    if shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-png", "-r", "70", "-f", "1", "-l", "2",
                        str(path), str(out / "report-names-pdf")], check=True)
