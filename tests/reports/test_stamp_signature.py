"""Every report's stamp is signed with the casino's Ed25519 key (issue 25
item 1): the signature verifies with the public key of /trail/keys.json over
the stamp as stored (every field but "signature"), and the key's fingerprint
is printed on the report, in every format."""

from __future__ import annotations

import base64
import csv
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings

from audit.reports.models import ReportJob
from audit.reports.services import report_request
from casino.signing import stamp_verify
from casino.spreadsheet import neutralise

from .conftest import DAY1, DAY3

pytestmark = pytest.mark.django_db


def build(user, capture, **kw):
    params = {"kind": "commission", "format": "csv", "from_day": DAY1,
              "to_day": DAY3, "group_by": "table", **kw}
    with capture(execute=True):
        job = report_request(user=user, **params)
    job = ReportJob.objects.get(pk=job.pk)  # the stamp as the database keeps it
    assert job.status == "done", job.error
    return job, Path(settings.MEDIA_ROOT) / job.file


def _outsider_verifies(stamp: dict, keys: dict) -> None:
    """With the documented format only: raises InvalidSignature if not."""
    key = next(k for k in keys["keys"] if k["id"] == stamp["signing_key_id"])
    statement = json.dumps({k: v for k, v in stamp.items() if k != "signature"},
                           sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode("utf-8")
    Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key_b64"])
                                       ).verify(base64.b64decode(stamp["signature"]),
                                                statement)


def test_a_csv_stamp_is_signed_and_prints_the_fingerprint(
        nights, manager, client, django_capture_on_commit_callbacks):
    job, path = build(manager, django_capture_on_commit_callbacks)
    stamp = job.stamp
    keys = client.get("/trail/keys.json").json()
    _outsider_verifies(stamp, keys)
    assert stamp_verify(stamp) == ""
    assert stamp["trail_anchor_link"] and len(stamp["trail_anchor_link"]) == 64
    lines = list(csv.reader(path.open(encoding="utf-8")))
    printed = dict(line for line in lines[:20] if len(line) == 2)
    assert stamp["signing_key_id"] in printed["signed by"]
    assert "/trail/keys.json" in printed["signed by"]
    # base64 may begin with "+": printed after a quote, as every CSV value
    # that a spreadsheet would run (casino/spreadsheet.py), and said so
    assert printed["signature"] == neutralise(stamp["signature"])
    assert printed["signature"].removeprefix("'") == stamp["signature"]
    assert "begins with + is printed after a '" in printed["signed by"]
    assert printed["trail anchor link"] == stamp["trail_anchor_link"]
    # a total changed on the stamp, or the period: the signature no longer holds
    for field, value in (("period", "gaming days 2020-01-01 to 2020-01-02"),
                         ("trail_anchor", "row 1 " + "0" * 64)):
        changed = {**stamp, field: value}
        with pytest.raises(InvalidSignature):
            _outsider_verifies(changed, keys)
        assert "does not verify" in stamp_verify(changed)


def test_the_xlsx_and_the_detail_csv_print_it_too(
        nights, manager, django_capture_on_commit_callbacks):
    job, path = build(manager, django_capture_on_commit_callbacks, format="xlsx")
    with zipfile.ZipFile(path) as z:
        strings = z.read("xl/sharedStrings.xml").decode()
    assert job.stamp["signing_key_id"] in strings
    assert job.stamp["signature"] in strings
    job, path = build(manager, django_capture_on_commit_callbacks, kind="coups")
    assert stamp_verify(job.stamp) == ""
    head = path.read_text(encoding="utf-8")[:4000]
    assert job.stamp["signing_key_id"] in head and job.stamp["signature"] in head


@pytest.mark.poppler
def test_the_pdf_prints_it(nights, manager, django_capture_on_commit_callbacks):
    job, path = build(manager, django_capture_on_commit_callbacks, format="pdf")
    text = subprocess.run(["pdftotext", "-raw", str(path), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "Signed by" in text and job.stamp["signing_key_id"] in text
    assert stamp_verify(job.stamp) == ""


def test_the_job_page_shows_the_key_and_signature(
        nights, manager, client, django_capture_on_commit_callbacks):
    job, _ = build(manager, django_capture_on_commit_callbacks)
    client.force_login(manager)
    page = client.get(f"/reports/jobs/{job.pk}/").content.decode()
    assert job.stamp["signing_key_id"] in page and job.stamp["signature"] in page
    assert 'href="/trail/keys.json"' in page


@pytest.mark.parametrize("signature", ["+CezyH1Sl3cw5TZEXwiXKJV8yI6jLrH9bv6l==",
                                       "CezyH1Sl3cw5TZEXwiXKJV8yI6jLrH9bv6l+=="])
def test_a_signature_that_begins_with_plus_is_printed_as_text(signature, tmp_path):
    """One signature in 64 begins with "+": the CSV line must not be a
    formula, and what follows the quote is the signature, whole."""
    from audit.reports.writers import write_stamp

    stamp = {"title": "t", "period": "p", "gaming_day_note": "n", "house_rules": [],
             "software_version": "v", "generated_at": "g", "generated_by": "u",
             "signing_key_id": "0123456789abcdef", "signature": signature}
    path = tmp_path / "s.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        write_stamp(csv.writer(f), stamp)
    printed = dict(csv.reader(path.open(encoding="utf-8")))
    assert not printed["signature"].startswith(("+", "=", "-", "@"))
    assert printed["signature"].removeprefix("'") == signature
    assert printed["signature"].startswith("'") == signature.startswith("+")
