"""A bundle that verifies is the whole record (issue 34 items 1 and 2):
every row a log row of its windows wrote is in it, whatever its kind, at
the state the latest write left it; and its report is its own (stamped at
the head that closes it). Each forgery removes or swaps rows and recomputes
the manifest, as a forger without the key would; the verifier runs with
only `cryptography` and Django barred (conftest.verify)."""

from __future__ import annotations

import json
import zipfile
from decimal import Decimal

import pytest

from audit.evidence.build import evidence_build
from casino.anchors import trail_anchor
from tables import services
from tables.models import Coup
from tests.audit.conftest import stake
from tests.conftest import make_user

from .conftest import VERIFIER, rewrite

NATURAL = (["2S", "3H"], ["9C", "KD"])


@pytest.fixture
def floor(db, croupier, pitboss, manager, table, signing_key):
    """One session with everything a session can carry: three holds and
    their releases, the decisions on their flags, a corrected coup, its
    shoe and session closed, the cagnotte counted and attested."""
    from audit.models import Flag
    from audit.services.cagnotte import (
        cagnotte_attest,
        cagnotte_count,
        session_commission,
    )
    from audit.services.flags import flag_confirm, flags_sync, may_decide
    from tables.services.holds import shoe_release

    pitboss2 = make_user("pitboss2", "pitboss")
    services.house_rules_change(table=table, user=manager, reason="hold",
                                hold_on_error=True)
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=3)
    services.banker_turn_open(session=session, user=croupier, seat=1,
                              bank=Decimal("1000"))

    def coup(**extra):
        return services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=NATURAL[0], banker=NATURAL[1],
            stakes=[stake(100)], **extra).coup

    first = coup()
    for _ in range(3):
        coup(declared_bank=Decimal("1"))  # a bank mismatch: the shoe held
        shoe_release(shoe=shoe.pk, user=pitboss, reason="checked")
    services.coup_correct(coup=first, user=pitboss2, reason="cards misread",
                          punter=NATURAL[0], banker=["9C", "QD"],
                          stakes=[stake(100)])
    trail_anchor(reason="interval")  # beat's, before the decisions
    flags_sync()
    for flag in Flag.objects.filter(status="open").order_by("pk"):
        decider = pitboss2 if may_decide(flag, pitboss2) else pitboss
        flag_confirm(flag=flag, user=decider, reason="seen on the camera")
    trail_anchor(reason="interval")  # and after them
    shoe.refresh_from_db()
    services.shoe_close(shoe=shoe, user=croupier,
                        cards_left=52 * shoe.decks - shoe.burned - 16)
    services.session_close(session=session, user=croupier)
    session.refresh_from_db()
    count = cagnotte_count(session=session, counted=session_commission(session),
                           user=pitboss)
    cagnotte_attest(count=count, user=manager)
    return session


@pytest.fixture
def day(floor):
    return floor.gaming_day


@pytest.fixture
def bundle(day, tmp_path):
    path = tmp_path / "bundle.zip"
    evidence_build(from_day=day, to_day=day, path=path)
    return path


@pytest.fixture
def check(verify, signing_key):
    def run(path):
        done = verify(path, "--public-key", str(signing_key))
        return done.returncode, done.stdout + done.stderr

    return run


def _lines(path, name="ledger.jsonl"):
    with zipfile.ZipFile(path) as z:
        return [json.loads(x) for x in z.read(name).splitlines()]


def _without(pick):
    """An edit removing the ledger lines `pick(lines)` returns."""
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        gone = pick(lines)
        assert gone, "nothing to remove: the fixture changed"
        edit.gone = [(x["label"], x["key"]) for x in gone]
        return [x for x in lines if x not in gone]

    return edit


def test_the_whole_session_verifies(bundle, check):
    labels = [x["label"] for x in _lines(bundle)]
    assert labels.count("audit.flagevent") == 3
    assert labels.count("tables.shoerelease") == 3
    assert labels.count("audit.cagnottecount") == 1
    assert labels.count("audit.cagnotteattestation") == 1
    assert labels.count("tables.coup") == Coup.objects.count() > 4
    code, out = check(bundle)
    assert code == 0, out


def _latest_revision(lines):
    latest = max((x for x in lines if x["label"] == "tables.coup"),
                 key=lambda x: x["row"].get("revision", 1))
    assert latest["row"]["revision"] == 2
    return [latest, *(x for x in lines if x["label"] in (
        "tables.stake", "tables.finding") and x["key"].startswith(
        latest["key"] + "#"))]


@pytest.mark.parametrize("pick", [
    # three decisions (audit.flagevent)
    lambda lines: [x for x in lines if x["label"] == "audit.flagevent"],
    # two shoe releases
    lambda lines: [x for x in lines if x["label"] == "tables.shoerelease"][:2],
    # a cagnotte count and its attestation
    lambda lines: [x for x in lines if x["label"] in (
        "audit.cagnottecount", "audit.cagnotteattestation")],
    # a corrected coup's latest revision and its stake: the older one stands
    _latest_revision,
], ids=["decisions", "releases", "count-and-attestation", "latest-revision"])
def test_a_row_removed_is_named_whatever_its_kind(bundle, tmp_path, check, pick):
    edit = _without(pick)
    code, out = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1, out
    for label, key in edit.gone:
        assert f"{label.split('.')[1]} {key}: written by log row" in out, out
    assert "missing from the bundle" in out


def test_the_log_between_two_anchors_left_out_is_named(bundle, tmp_path, check):
    """The decisions removed with the stretch of log that wrote them: the log
    cut into two windows, each closed by a genuine signed anchor (beat's,
    before and after the decisions), the second seeded with the link of the
    row before it (public)."""
    from casino.anchors import anchors_list
    from casino.models import ChangeLog

    before, after = sorted((a for a in anchors_list() if a.reason == "interval"),
                           key=lambda a: a.row)
    decisions = set(ChangeLog.objects.filter(
        action="audit.flag.confirmed").values_list("id", flat=True))
    assert before.row < min(decisions) and max(decisions) <= after.row
    from audit.evidence.signed import _item

    def edit(name, lines):
        if name == "ledger.jsonl":
            return [x for x in lines if x["label"] != "audit.flagevent"]
        if name == "log.jsonl":
            return [x for x in lines if not before.row < x["id"] <= after.row]
        if name == "anchors.jsonl":
            return [_item(before), *lines]
        return None

    forged = rewrite(bundle, tmp_path / "x.zip", edit)
    with zipfile.ZipFile(forged) as z:
        manifest = json.loads(z.read("manifest.json"))
        parts = {n: z.read(n) for n in z.namelist()}
    [window] = manifest["windows"]
    manifest["windows"] = [
        {**window, "last": before.row},
        {"first": after.row + 1, "last": window["last"], "seed_row": after.row,
         "seed": after.link}]
    parts["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(forged, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    code, out = check(forged)
    assert code == 1
    assert (f"before the bundle's last window (from row {after.row + 1}): the "
            "log between its windows, and what it wrote, is not all there") in out


def test_the_revision_settled_is_the_one_the_log_wrote_last(
        bundle, tmp_path, check):
    """Revisions renumbered (the older made "2" and dealt last): besides
    the digests, the settled coup is named as not the latest written."""
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        coups = [x for x in lines if x["label"] == "tables.coup"]
        old, new = sorted((x for x in coups if x["row"]["seq"] == 1),
                          key=lambda x: x["row"].get("revision", 1))
        old["row"]["revision"] = 2  # a row at revision 1 leaves it out
        del new["row"]["revision"]
        i, j = lines.index(old), lines.index(new)
        edit.keys = old["key"], new["key"]
        block_old = [old, *(x for x in lines if x["label"] in (
            "tables.stake", "tables.finding") and x["key"].startswith(
            old["key"] + "#"))]
        block_new = [new, *(x for x in lines if x["label"] in (
            "tables.stake", "tables.finding") and x["key"].startswith(
            new["key"] + "#"))]
        rest = [x for x in lines if x not in block_old and x not in block_new]
        at = min(i, j)
        return rest[:at] + block_new + block_old + rest[at:]

    code, out = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    old, new = edit.keys
    assert (f"coup {old} (shoe" in out and "settled as the latest revision"
            in out and f"wrote coup {new} of the same seq after it" in out), out


def test_a_kind_the_verifier_does_not_list_is_required(day, tmp_path, check):
    """A gaming-day close: no list in the verifier names it, the log does;
    the bundle carries it (outside the period's sessions) and may not drop
    it."""
    from django.utils import timezone

    from audit.models import GamingDayClose
    from casino.changelog import log_action

    close = GamingDayClose.objects.create(kind="anchor", cutoff_hour=6,
                                          gaming_day=day, done_at=timezone.now())
    log_action(action="audit.gaming_day.closed", rows=[close],
               new={"gaming_day": day.isoformat()})
    path = tmp_path / "b.zip"
    evidence_build(from_day=day, to_day=day, path=path)
    outside = _lines(path, "outside.jsonl")
    assert ("audit.gamingdayclose", str(close.pk)) in {
        (x["label"], x["key"]) for x in outside}
    assert check(path)[0] == 0

    def edit(name, lines):
        if name != "outside.jsonl":
            return None
        return [x for x in lines if x["label"] != "audit.gamingdayclose"]

    code, out = check(rewrite(path, tmp_path / "x.zip", edit))
    assert code == 1
    assert (f"gamingdayclose {close.pk}: written by log row" in out
            and "missing from the bundle" in out), out


def test_the_kinds_left_out_are_the_same_on_both_sides():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "evidence_complete", VERIFIER.parent / "evidence_verifier" / "complete.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from audit.evidence.outside import NOT_CARRIED
    from audit.evidence.rows import LABELS
    from casino.trail import BOUND

    assert set(module.NOT_CARRIED) == NOT_CARRIED
    assert NOT_CARRIED <= set(BOUND) and not NOT_CARRIED & set(LABELS)
    assert module.required("tables.somethingnew")


@pytest.fixture
def two_tables(db, croupier, signing_key):
    from tables.simulation import simulate

    simulate(user=croupier, tables=2, shoes=1, seed=3)
    mine = Coup.objects.order_by("pk").first().shoe.session.table
    return mine, Coup.objects.values_list("gaming_day", flat=True).first()


def test_one_tables_bundle_carries_the_others_rows_outside(
        two_tables, tmp_path, check):
    mine, day = two_tables
    path = tmp_path / "b.zip"
    evidence_build(from_day=day, to_day=day, table_ids=[mine.pk], path=path)
    ledger = _lines(path)
    outside = _lines(path, "outside.jsonl")
    theirs = set(Coup.objects.exclude(shoe__session__table=mine)
                 .values_list("pk", flat=True))
    assert not {x["id"] for x in ledger if x["label"] == "tables.coup"} & theirs
    assert {x["id"] for x in outside if x["label"] == "tables.coup"} == theirs
    code, out = check(path)
    assert code == 0, out

    def drop(name, lines):
        if name != "outside.jsonl":
            return None
        gone = next(x for x in lines if x["label"] == "tables.stake")
        drop.key = gone["key"]
        return [x for x in lines if x is not gone]

    code, out = check(rewrite(path, tmp_path / "x.zip", drop))
    assert code == 1 and f"stake {drop.key}: written by log row" in out, out


def test_a_coup_of_the_period_moved_outside_is_named(bundle, tmp_path, check):
    def edit(name, lines):
        if name not in ("ledger.jsonl", "outside.jsonl"):
            return None
        if name == "ledger.jsonl":
            coup = max((x for x in lines if x["label"] == "tables.coup"),
                       key=lambda x: x["row"]["seq"])
            edit.moved = [coup, *(x for x in lines if x["key"].startswith(
                coup["key"] + "#") and x["label"] in ("tables.stake",
                                                     "tables.finding"))]
            return [x for x in lines if x not in edit.moved]
        return [*lines, *edit.moved]

    code, out = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert (f"coup {edit.moved[0]['key']}: played at table" in out
            and "in the period, yet given in outside.jsonl" in out), out


@pytest.mark.parametrize("which", ["outside", "ledger"])
def test_written_after_the_windows_only_for_a_row_the_design_updates(
        two_tables, tmp_path, check, which):
    """"later" stands in for a row only when the log wrote it as one the
    design updates and the period's rows do not hold it: not for a coup."""
    mine, day = two_tables
    path = tmp_path / "b.zip"
    evidence_build(from_day=day, to_day=day, table_ids=[mine.pk], path=path)

    def edit(name, lines):
        if name != which + ".jsonl":
            return None
        coup = next(x for x in lines if x["label"] == "tables.coup")
        edit.key = coup["key"]
        marker = {"label": "tables.coup", "key": coup["key"], "later": True}
        if which == "outside":
            return [marker if x is coup else x for x in lines]
        edit.extra = marker
        return lines

    def both(name, lines):
        out = edit(name, lines)
        if which == "ledger" and name == "outside.jsonl":
            return [*lines, edit.extra]
        return out

    code, out = check(rewrite(path, tmp_path / "x.zip", both))
    assert code == 1
    assert f"coup {edit.key}: outside.jsonl says it was written again after" in out


# -- the report belongs to the bundle (item 2) ---------------------------------------

def test_a_newer_report_beside_an_older_bundle_is_refused(
        session, shoe, turn, croupier, pitboss, tmp_path, check):
    """An older genuine bundle (its log cut at its closing anchor) with the
    newer report, stamped after a correction that the older log does not
    hold."""
    first = services.coup_record(shoe_id=shoe.pk, user=croupier,
                                 punter=NATURAL[0], banker=NATURAL[1],
                                 stakes=[stake(100)]).coup
    day = first.gaming_day
    older = tmp_path / "older.zip"
    evidence_build(from_day=day, to_day=day, path=older)
    closing = _lines(older, "anchors.jsonl")[-1]
    assert check(older)[0] == 0
    services.coup_correct(coup=first, user=pitboss, reason="cards misread",
                          punter=NATURAL[0], banker=["9C", "QD"],
                          stakes=[stake(100)])
    trail_anchor(reason="after the correction")
    newer = tmp_path / "newer.zip"
    evidence_build(from_day=day, to_day=day, path=newer)
    report = _lines(newer, "report.json")[0]
    assert int(report["stamp"]["trail_anchor"].split()[1]) > closing["row"]
    assert check(newer)[0] == 0

    def swap(name, lines):
        return [report] if name == "report.json" else None

    code, out = check(rewrite(older, tmp_path / "x.zip", swap))
    assert code == 1
    assert (f"the bundle closes at 'row {closing['row']} {closing['hash']}': the "
            "report is not this bundle's") in out, out


def test_a_report_of_another_period_is_refused(day, tmp_path, check):
    import datetime

    path = tmp_path / "b.zip"
    evidence_build(from_day=day, to_day=day, path=path)
    other = tmp_path / "other.zip"
    evidence_build(from_day=day - datetime.timedelta(days=1), to_day=day,
                   path=other)
    report = _lines(other, "report.json")[0]

    def swap(name, lines):
        return [report] if name == "report.json" else None

    code, out = check(rewrite(path, tmp_path / "x.zip", swap))
    assert code == 1
    assert (f"the report's stamp is for 'gaming days "
            f"{day - datetime.timedelta(days=1)} to {day}', the bundle for "
            f"'gaming days {day} to {day}'") in out, out


def test_rows_written_long_before_come_in_windows_of_their_own(
        table, manager, croupier, tmp_path, check):
    """The table and its house rules, anchored, then other writes and another
    anchor, then the period's session: two windows with the log between
    them left out, as built; it verifies (the period's rows are all in the
    last window)."""
    trail_anchor(reason="interval")
    services.table_create(user=manager, name="Elsewhere")
    trail_anchor(reason="interval")
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=3)
    services.banker_turn_open(session=session, user=croupier, seat=1,
                              bank=Decimal("1000"))
    coup = services.coup_record(shoe_id=shoe.pk, user=croupier, punter=NATURAL[0],
                                banker=NATURAL[1], stakes=[stake(100)]).coup
    path = tmp_path / "b.zip"
    manifest = evidence_build(from_day=coup.gaming_day, to_day=coup.gaming_day,
                              path=path)
    assert len(manifest["windows"]) == 2
    code, out = check(path)
    assert code == 0, out
