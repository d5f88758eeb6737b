"""Dates within sane bounds (issue 33 item 9, attack 13; casino/bounds.py):
a report's or a re-audit's period, the floor statistics' range, and the
pages' hints, each refused (400 naming the field) or ignored, never a 500
from a day past 9999-12-31. House rules, tableaux and entered_at are tested
with their other refusals (test_house_rules.py, test_tableaux.py,
test_coup_author.py, audit/test_house_rules_pages.py)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from casino.bounds import check_day, check_start_day
from casino.errors import Invalid

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("field, value", [
    ("from_day", "0001-01-01"), ("from_day", "1999-12-31"),
    ("to_day", "9999-12-31"),
])
def test_a_report_period_out_of_bounds_is_refused(as_user, manager, field, value):
    from audit.reports.models import ReauditRun, ReportJob

    body = {"kind": "commission", "format": "csv", "from_day": "2026-01-01",
            "to_day": "2026-01-02", field: value}
    api = as_user(manager)
    r = api.post("/api/v1/reports/", body, format="json")
    assert r.status_code == 400 and field in r.json(), r.json()
    r = api.post("/api/v1/reports/reaudit/", {
        k: v for k, v in body.items() if k.endswith("_day")}, format="json")
    assert r.status_code == 400 and field in r.json(), r.json()
    assert not ReportJob.objects.exists() and not ReauditRun.objects.exists()


def test_the_reports_page_names_the_field(manager, client):
    client.force_login(manager)
    r = client.post("/reports/request/", {"kind": "commission", "format": "csv",
                                          "from_day": "0001-01-01",
                                          "to_day": "2026-01-01"}, follow=True)
    assert "from_day: must not be before 2000-01-01" in r.content.decode()


@pytest.mark.parametrize("query, field", [
    ({"from": "0001-01-01", "to": "0001-01-02"}, "to"),
    ({"to": "0001-01-01"}, "to"),
    ({"from": "1999-01-01", "to": "1999-06-01"}, "to"),
    ({"to": "9999-12-31"}, "to"),
])
def test_the_stats_range_out_of_bounds_is_refused(as_user, manager, query, field):
    r = as_user(manager).get("/api/v1/stats/", query)
    assert r.status_code == 400 and field in r.json(), r.json()


def test_a_page_hint_out_of_bounds_is_ignored(manager, client, table):
    from tables.models import TableauVersion

    client.force_login(manager)
    row = TableauVersion.objects.first()
    r = client.get(f"/tableaux/{row.pk}/",
                   {"table": table.pk, "assigned": table.pk, "from": "0001-01-01"})
    assert r.status_code == 200
    r = client.get("/floor/stats/", {"day_from": "0001-01-01", "day_to": "9999-12-31"})
    assert r.status_code == 200


def test_the_bounds():
    today = date(2026, 6, 1)
    check_day("d", date(2000, 1, 1), today=today)
    check_day("d", today + timedelta(days=366), today=today)
    for bad in (date(1999, 12, 31), today + timedelta(days=367), date.max):
        with pytest.raises(Invalid) as exc:
            check_day("d", bad, today=today)
        assert exc.value.field == "d"
    check_start_day("effective_from", today + timedelta(days=5 * 366), today=today)
    with pytest.raises(Invalid):
        check_start_day("effective_from", date(9999, 12, 31), today=today)
