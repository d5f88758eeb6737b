"""Flags: the pit boss's review items, and his decisions on them.

A finding is the fact, written with its coup by coup_record (tables never
imports audit); its flag is raised in the same transaction, at the coup's
time, by the writer audit registers with tables (flag_raise.py). `flags_sync`
brings the flags up to date with the findings of the current coup revisions:
it raises a flag for a finding that has none (a coup recorded before flags
were raised with it, a correction's new revision), moves a flag
to the new revision of its coup after a correction, and marks one whose
finding the corrected record no longer shows "resolved by a correction, to
review": a "resolved" step with `to_review`, which closes nothing (four eyes:
the flag stays open until a pit boss other than the corrector confirms or
dismisses it; a shoe's count that a correction makes add up, and a cagnotte
variance it makes disappear, go the same way). It is idempotent, runs inside
every correction, and before the queue or the floor is read (at most every
FLAGS_PAGE_SYNC_SECONDS per web process: it reads every live flag), so a
flag is never missing from the queue for longer than that.

Decisions (each with a reason, each a FlagEvent and a change-log row):
confirm (the event happened; the house rule's sanction is recorded), dismiss
(not a real event: only once the record no longer shows it, i.e. after a
correction, or a matching recount; a shoe_count flag only once the shoe's
dealt, burned and counted cards add up), correct (a new revision of the
coup). Four eyes: nobody decides on a flag that his own work raised or
shaped — his entry (the croupier), his count, his correction or the re-settle
it wrote (`decision_barred` names them all; the services, the API and the
pages all ask it).

Who raised a flag is its `author`: the croupier for a finding of the coup as
he entered it; the pit boss whose correction wrote the revision that first
shows the finding (the corrected coup, or a later coup it re-settled), or
whose correction raised a turn-structure issue or a cagnotte variance; the
pit boss who counted the box. The croupier who entered the coup stays on the
flag (`croupier`) and on the coup (`entered_by`), whoever raised it.
"""

from __future__ import annotations

from decimal import Decimal
from time import monotonic

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import alarm, guard, seal_check
from tables.errors import Conflict, Forbidden, Invalid, RecordChanged
from tables.models import Coup, Finding, HouseRules, Shoe
from tables.services import CorrectionResult, StakeInput, coup_correct

from ..models import Flag, FlagEvent
from .flag_raise import finding_key
from .four_eyes import (
    FOUR_EYES,
    decision_barred,  # noqa: F401 (its old home, re-exported)
    may_decide,
)
from .integrity import flag_state_check

SYNC_LOCK_KEY = 0x464C47  # "FLG"
SANCTIONED = {"false_draw", "draw_after_natural"}
STRUCTURE_CODE = "turn_structure"
SHOE_COUNT = "shoe_count"


def _event(flag: Flag, action: str, *, user=None, reason="", coup=None, at=None,
           **detail):
    return FlagEvent.objects.create(
        flag=flag, at=at or timezone.now(), user=user, action=action, reason=reason,
        coup=coup, detail=detail,
    )


def _newer_revision(prefix: str = ""):
    """Revisions that supersede the coup at OuterRef(prefix...)."""
    return Coup.objects.filter(
        shoe=OuterRef(f"{prefix}shoe"), seq=OuterRef(f"{prefix}seq"),
        revision__gt=OuterRef(f"{prefix}revision"),
    )


_page_synced = 0.0  # when this process last synced for a page (monotonic)


def flags_sync(*, wait: bool = True) -> int:
    """Raise, move and resolve finding flags (a flag whose finding a
    correction made disappear is "resolved by a correction, to review": it
    stays open for another pit boss). Returns how many changed.
    `wait=False` (a page or the floor API about to read): skipped if another
    request is syncing, or if this process synced for a page less than
    settings.FLAGS_PAGE_SYNC_SECONDS ago (the scan reads every live flag;
    coups and corrections raise and move theirs in their own transactions)."""
    global _page_synced
    if not wait:
        now = monotonic()
        if now - _page_synced < settings.FLAGS_PAGE_SYNC_SECONDS:
            return 0
        _page_synced = now
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                if wait:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SYNC_LOCK_KEY])
                else:
                    cursor.execute("SELECT pg_try_advisory_xact_lock(%s)",
                                   [SYNC_LOCK_KEY])
                    if not cursor.fetchone()[0]:
                        return 0  # another request is syncing right now
        return _follow_revisions() + _raise_new()


def _tampered(flag: Flag) -> bool:
    """A flag whose state its history does not explain is not written over
    by the sync (the alarm is raised, once, after this transaction)."""
    try:
        flag_state_check(flag)
    except RecordChanged as exc:
        found = exc
        transaction.on_commit(lambda: alarm(found, device="flags_sync"))
        return True
    return False


def _current(shoe_id: int, seq: int) -> Coup:
    return (Coup.objects.filter(shoe_id=shoe_id, seq=seq)
            .prefetch_related("findings").order_by("-revision").first())


def _follow_revisions() -> int:
    newer = Coup.objects.filter(
        shoe=OuterRef("shoe"), seq=OuterRef("seq"),
        revision__gt=OuterRef("coup__revision"),
    )
    stale = (
        Flag.objects.select_for_update(of=("self",), no_key=True)
        .filter(kind=Flag.Kind.FINDING, live=True)
        .filter(Exists(newer))
    )
    n = 0
    for flag in stale:
        if _tampered(flag):
            continue
        cur = _current(flag.shoe_id, flag.seq)
        key = flag.ident.split(":", 3)[3]
        match = next((f for f in cur.findings.all()
                      if finding_key(f.code, f.side, f.detail) == key), None)
        flag.coup = cur
        if match is not None:
            flag.finding, flag.message = match, match.message[:400]
            flag.save(update_fields=["coup", "finding", "message"])
            _event(flag, "moved", user=cur.corrected_by, coup=cur,
                   revision=cur.revision)
        else:
            flag.live = False
            flag.save(update_fields=["coup", "live"])
            if flag.is_open:
                # Four eyes: the correction closes nothing by itself; the
                # flag stays open, to review by another pit boss.
                _event(flag, "resolved", user=cur.corrected_by, coup=cur,
                       reason=cur.correction_reason, revision=cur.revision,
                       to_review=True)
        n += 1
    return n


def _raise_new() -> int:
    fresh = (
        Finding.objects.filter(flag__isnull=True)
        .filter(~Exists(_newer_revision("coup__")))
        .select_related("coup__shoe__session", "coup__corrected_by")
        .order_by("pk")
    )
    n = 0
    for f in fresh:
        coup = f.coup
        key = finding_key(f.code, f.side, f.detail)
        ident = f"f:{coup.shoe_id}:{coup.seq}:{key}"
        flag = Flag.objects.select_for_update(no_key=True).filter(ident=ident).first()
        if flag is not None and _tampered(flag):
            continue
        if flag is not None:  # resolved earlier, shown again by a later correction
            flag.finding, flag.coup, flag.live = f, coup, True
            flag.message = f.message[:400]
            flag.status, flag.decided_at, flag.decided_by = Flag.Status.OPEN, None, None
            flag.author_id = coup.corrected_by_id or coup.entered_by_id
            flag.save()
            _event(flag, "raised_again", user=coup.corrected_by, coup=coup,
                   revision=coup.revision)
        else:
            origin = _origin(coup, key)
            session = coup.shoe.session
            flag = Flag.objects.create(
                ident=ident, kind=Flag.Kind.FINDING, code=f.code,
                severity=f.severity, side=f.side, message=f.message[:400],
                table_id=session.table_id, session=session,
                gaming_day=coup.gaming_day, shoe_id=coup.shoe_id, seq=coup.seq,
                coup=coup, finding=f, croupier_id=coup.entered_by_id,
                author_id=origin.corrected_by_id or origin.entered_by_id,
                raised_at=coup.corrected_at or coup.created_at,
            )
            # A correction's flag names the corrector in its history too;
            # an entry's is raised by the system (its author is the croupier).
            # Raised when the coup was written, not now (a coup recorded
            # before flag_raise raised flags in its own transaction).
            _event(flag, "raised", user=origin.corrected_by, coup=coup,
                   at=flag.raised_at, revision=coup.revision,
                   raised_by_revision=origin.revision)
        n += 1
    return n


def _origin(coup: Coup, key: str) -> Coup:
    """The revision whose writing raised a finding: the earliest of the run of
    revisions, back from `coup`, that all show it (the first revision: the
    croupier's entry; a later one: the correction or re-settle that wrote
    it). Asked only when no flag holds the finding yet, i.e. the queue was
    not synced between the entry and a correction."""
    if coup.revision == 1:
        return coup
    earlier = (Coup.objects.filter(shoe_id=coup.shoe_id, seq=coup.seq,
                                   revision__lt=coup.revision)
               .prefetch_related("findings").order_by("-revision"))
    origin = coup
    for rev in earlier:
        if not any(finding_key(f.code, f.side, f.detail) == key
                   for f in rev.findings.all()):
            break
        origin = rev
    return origin


def _lock_open(flag: Flag, user) -> Flag:
    flag = (Flag.objects.select_for_update(of=("self",), no_key=True)
            .select_related("coup__rules").get(pk=flag.pk))
    flag_state_check(flag)  # its status is its history's, not set by hand
    if not flag.is_open:
        raise Conflict("flag", f"this flag is already {flag.status}")
    if not may_decide(flag, user):
        raise Forbidden("flag", FOUR_EYES)
    return flag


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", "a decision needs a reason")
    return reason


def _sanction(flag: Flag, fine_amount: Decimal | None) -> dict:
    if flag.code not in SANCTIONED or flag.coup is None:
        if fine_amount is not None:
            raise Invalid("fine_amount", "no sanction applies to this finding")
        return {}
    sanction = flag.coup.rules.false_draw_sanction
    player = flag.coup.punter_seat if flag.side == "punter" else flag.coup.banker_seat
    out = {"sanction": sanction, "player_seat": player}
    if sanction == HouseRules.Sanction.FINE:
        if fine_amount is None:
            raise Invalid("fine_amount", "the house rules fine a false draw: "
                          "give the amount")
        if (not isinstance(fine_amount, Decimal) or not fine_amount.is_finite()
                or fine_amount <= 0 or fine_amount.as_tuple().exponent < -2):
            raise Invalid("fine_amount", "must be a positive amount, 2 decimals")
        out["fine_amount"] = str(fine_amount)
    elif fine_amount is not None:
        raise Invalid("fine_amount", "the house rules of this table set no fine "
                      "(French rules forbid them)")
    return out


def _decide(flag: Flag, status: str, user, reason: str, device: str, **detail):
    old = {"status": flag.status}
    flag.status, flag.decided_at, flag.decided_by = status, timezone.now(), user
    flag.save(update_fields=["status", "decided_at", "decided_by"])
    action = {"confirmed": "confirmed", "dismissed": "dismissed"}[status]
    event = _event(flag, action, user=user, reason=reason, coup=flag.coup, **detail)
    log_action(action=f"audit.flag.{action}", user=user, device=device, obj=flag,
               reason=reason, old=old, rows=[event],
               new={"status": status, "code": flag.code, "coup": flag.coup_id,
                    **detail})
    return flag


def flag_confirm(*, flag: Flag, user, reason: str,
                 fine_amount: Decimal | None = None, device: str = "") -> Flag:
    """The event happened. For a false draw the table's house rule says the
    sanction (none by default; the shoe taken away; a fine where allowed)."""
    reason = _reason(reason)
    with guard(user=user, device=device):
        flag = _lock_open(flag, user)
        sanction = _sanction(flag, fine_amount)
        return _decide(flag, Flag.Status.CONFIRMED, user, reason, device, **sanction)


def flag_dismiss(*, flag: Flag, user, reason: str, correction: dict | None = None,
                 device: str = "") -> Flag:
    """Not a real event: only once the record no longer shows it. If the
    record still shows it, the record is wrong: the dismissal carries the
    correction (`correction`: punter, banker, stakes, declared_bank,
    plan_digest), applied in the same transaction — and then, four eyes, the
    correction closes nothing by itself: the flag is left open, "resolved by
    a correction, to review", for a pit boss other than this one."""
    reason = _reason(reason)
    with guard(user=user, device=device):
        flag = _lock_open(flag, user)
        if correction is not None:
            if flag.coup is None:
                raise Invalid("correction", "this flag is not about a coup")
            coup_correct_reviewed(coup=flag.coup, user=user, reason=reason,
                                  device=device, **correction)
            flag.refresh_from_db()
            if flag.kind == Flag.Kind.FINDING and flag.live:
                raise Conflict("correction", "the record still shows this finding: "
                               "correct the coup (the record is wrong) or confirm it")
            return flag  # resolved by his correction: another pit boss reviews it
        _still_shown(flag)
        return _decide(flag, Flag.Status.DISMISSED, user, reason, device)


def _still_shown(flag: Flag) -> None:
    """A dismissal says the record no longer shows what the flag is about:
    refused (naming why) while it still does."""
    if flag.kind == Flag.Kind.FINDING and flag.live:
        raise Conflict("correction", "the record still shows this finding: "
                       "correct the coup (the record is wrong) or confirm it")
    if flag.kind == Flag.Kind.CAGNOTTE and flag.live:
        raise Conflict("counted", "the count still differs from the commission: "
                       "recount the cagnotte or confirm the variance")
    if flag.kind == Flag.Kind.SHOE and flag.code == SHOE_COUNT:
        difference, expected = _shoe_count_difference(flag.shoe_id)
        if difference:
            what = "more" if difference > 0 else "fewer"
            raise Conflict(
                "cards_left",
                "the shoe's count still differs: dealt, burned and counted left "
                f"make {expected + difference} of its {expected} cards "
                f"({abs(difference)} {what}); it is dismissed only once the "
                "record accounts for every card (correct the coup keyed wrong), "
                "or confirm it")


def _shoe_count_difference(shoe_id: int) -> tuple[int, int]:
    """(dealt + burned + counted left - 52 x decks, 52 x decks) for the shoe
    as it stands now (a correction changes what was dealt); a difference of
    0 when it was closed uncounted."""
    shoe = Shoe.objects.get(pk=shoe_id)
    seal_check(shoe)
    expected = 52 * shoe.decks
    if shoe.left_counted is None:
        return 0, expected
    return shoe.dealt + shoe.burned + shoe.left_counted - expected, expected


def _shoe_counts_recheck(result: CorrectionResult, user) -> None:
    """After a correction that changed what a closed shoe dealt: its
    shoe_count flag follows, as a finding's does. A count that now adds up
    closes nothing by itself (resolved by a correction, to review); one that
    differs again is raised again."""
    for shoe_id in result.plan.shoes:
        flag = (Flag.objects.select_for_update(no_key=True)
                .filter(ident=f"h:{shoe_id}:{SHOE_COUNT}").first())
        if flag is None or _tampered(flag):
            continue
        differs = _shoe_count_difference(shoe_id)[0] != 0
        if differs == flag.live:
            continue
        target = result.plan.target
        why = (f"after correction of coup {target.seq} of shoe "
               f"{target.shoe.number}")
        if not differs:
            flag.live = False
            flag.save(update_fields=["live"])
            if flag.is_open:
                _event(flag, "resolved", user=user, reason=why,
                       coup=result.revision, to_review=True)
            continue
        flag.live, flag.author = True, user
        flag.status, flag.decided_at, flag.decided_by = Flag.Status.OPEN, None, None
        flag.save(update_fields=["live", "author", "status", "decided_at",
                                 "decided_by"])
        _event(flag, "raised_again", user=user, reason=why, coup=result.revision)


def coup_correct_reviewed(
    *, coup: Coup, user, reason: str, punter, banker, stakes: list[StakeInput],
    declared_bank: Decimal | None = None, plan_digest: str | None = None,
    device: str = "", flag: Flag | None = None,
) -> CorrectionResult:
    """A correction as the pit boss makes it: the new revision and the
    re-settlement (tables), then the flags follow in the same transaction —
    moved, resolved, a turn-structure issue raised, the cagnotte re-checked."""
    from .cagnotte import cagnotte_recheck

    with transaction.atomic():
        result = coup_correct(
            coup=coup, user=user, reason=reason, punter=punter, banker=banker,
            stakes=stakes, declared_bank=declared_bank, plan_digest=plan_digest,
            device=device)
        flags_sync()
        _shoe_counts_recheck(result, user)
        for issue in result.plan.issues:
            _raise_structure(issue, user)
        if flag is not None:
            _event(flag, "corrected", user=user, reason=reason,
                   coup=result.revision, revision=result.revision.revision)
        cagnotte_recheck(session=result.revision.shoe.session, after=result)
    return result


def _raise_structure(issue: dict, user) -> Flag:
    old = Coup.objects.select_related("shoe__session").get(pk=issue["coup"])
    cur = _current(old.shoe_id, old.seq)
    ident = f"s:{old.shoe_id}:{old.seq}:{issue['kind']}"
    flag = Flag.objects.select_for_update(no_key=True).filter(ident=ident).first()
    if flag is None:
        session = old.shoe.session
        flag = Flag.objects.create(
            ident=ident, kind=Flag.Kind.STRUCTURE, code=STRUCTURE_CODE,
            severity="critical", message=issue["message"][:400],
            table_id=session.table_id, session=session, gaming_day=cur.gaming_day,
            shoe_id=old.shoe_id, seq=old.seq, coup=cur,
            croupier_id=cur.entered_by_id, author=user, raised_at=timezone.now(),
        )
        _event(flag, "raised", user=user, coup=cur, kind=issue["kind"])
        return flag
    flag.coup, flag.message, flag.author = cur, issue["message"][:400], user
    flag.status, flag.decided_at, flag.decided_by = Flag.Status.OPEN, None, None
    flag.save()
    _event(flag, "raised_again", user=user, coup=cur, kind=issue["kind"])
    return flag
