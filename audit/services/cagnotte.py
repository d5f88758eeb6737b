"""Closing a session: the cagnotte count, its variance, the manager's
attestation ("certifié exact") and the lock that follows.

The count compares the box with the commission computed over the session's
current coup revisions; any difference raises `cagnotte_variance` (critical)
for the pit boss's queue. A recount is a new row (with a reason); once the
latest count is attested the session is locked — no recount, later changes
only through corrections with reasons, which re-check the variance.

A count is not attested while its variance flag is open: "certifié exact"
over a discrepancy nobody has decided would certify what is not known to be
true. A pit boss other than the counter decides the flag first (confirms the
variance, with a reason, or dismisses it once a recount or a correction
makes the box and the commission agree); the attestation then stands on a
decided record, and names the decision.

Four eyes hold on a recount too: a matching recount resolves the flag only
when made by a pit boss whose work the flag is not about (not the one whose
count differed, nor anyone who raised or moved it: `decision_barred`).
Otherwise the flag stays open, "to review", for another pit boss to decide
or to recount; the page and the API both count through `cagnotte_count`.
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum
from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import guard, seal_check
from tables import chemmy
from tables.errors import Conflict, Forbidden, Invalid
from tables.models import TableSession
from tables.rollups import current_coups

from ..models import CagnotteAttestation, CagnotteCount, Flag, FlagEvent
from .four_eyes import may_decide
from .integrity import flag_state_check

ZERO = Decimal("0.00")


def session_commission(session: TableSession) -> Decimal:
    """The commission computed over the session (current revisions)."""
    total = current_coups().filter(shoe__session=session).aggregate(
        s=Sum("commission"))["s"]
    return (total or ZERO).quantize(Decimal("0.01"))


def latest_count(session: TableSession) -> CagnotteCount | None:
    return (CagnotteCount.objects.filter(session=session)
            .order_by("-counted_at", "-pk").first())


def session_locked(session: TableSession) -> bool:
    return CagnotteAttestation.objects.filter(count__session=session).exists()


def _amount(value) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise Invalid("counted", "must be a decimal amount")
    value = Decimal(value)
    if not value.is_finite() or value < 0:
        raise Invalid("counted", "must be zero or a positive amount")
    if value.as_tuple().exponent < -2:
        raise Invalid("counted", "must have at most 2 decimal places")
    if value >= Decimal("1e12"):
        raise Invalid("counted", "is too large")
    return value.quantize(Decimal("0.01"))


def cagnotte_count(*, session: TableSession, counted, user, reason: str = "",
                   device: str = "") -> CagnotteCount:
    counted = _amount(counted)
    reason = (reason or "").strip()
    with guard(user=user, device=device):
        session = TableSession.objects.select_for_update(no_key=True).get(pk=session.pk)
        seal_check(session)
        if session.is_open:
            raise Conflict("session", "close the session before counting the "
                           "cagnotte")
        if session_locked(session):
            raise Conflict("session", "the count is attested: the session is "
                           "locked")
        previous = latest_count(session)
        if previous is not None and not reason:
            raise Invalid("reason", "a recount needs a reason")
        computed = session_commission(session)
        count = CagnotteCount.objects.create(
            session=session, counted=counted, computed=computed,
            variance=counted - computed, counted_by=user,
            counted_at=timezone.now(), reason=reason)
        _variance_flag(session, count, counted, computed, user=user,
                       why=reason or "cagnotte counted")
        log_action(
            action="audit.cagnotte.counted", user=user, device=device, obj=count,
            reason=reason,
            old=None if previous is None else {
                "count": previous.pk, "counted": previous.counted},
            new={"session": session.pk, "counted": counted, "computed": computed,
                 "variance": count.variance})
    return count


def _variance_flag(session, count, counted, computed, *, user, why: str,
                   correction: bool = False) -> None:
    """Raise, update or resolve the session's one cagnotte flag."""
    finding = chemmy.cagnotte_variance_finding(counted=counted, computed=computed)
    flag = (Flag.objects.select_for_update(no_key=True)
            .filter(ident=f"c:{session.pk}").first())
    now = timezone.now()
    if finding is None:
        if flag is not None:
            _box_matches(flag, count, computed, user=user, why=why, now=now,
                         correction=correction)
        return
    detail = {"counted": str(counted), "computed": str(computed),
              "difference": str(counted - computed)}
    if flag is None:
        flag = Flag.objects.create(
            ident=f"c:{session.pk}", kind=Flag.Kind.CAGNOTTE, code=finding.code,
            severity=finding.severity, message=finding.message[:400],
            table_id=session.table_id, session=session,
            gaming_day=session.gaming_day, count=count,
            croupier_id=session.croupier_id, author=user, raised_at=now)
        FlagEvent.objects.create(flag=flag, at=now, user=user, action="raised",
                                 reason=why, detail=detail)
        return
    was_open = flag.is_open and flag.live
    flag.message, flag.count, flag.live = finding.message[:400], count, True
    # Whoever raised it this time (the recounter, or the pit boss whose
    # correction made the box differ); decision_barred keeps the others.
    flag.author = user
    if not flag.is_open:
        flag.status, flag.decided_at, flag.decided_by = Flag.Status.OPEN, None, None
    flag.save()
    FlagEvent.objects.create(flag=flag, at=now, user=user,
                             action="moved" if was_open else "raised_again",
                             reason=why, detail=detail)


def _box_matches(flag, count, computed, *, user, why: str, now,
                 correction: bool) -> None:
    """The box and the commission agree now. Four eyes: a matching recount
    closes the open flag (resolved) only when the recounter's own work is
    not what the flag is about (`decision_barred`: he made the count that
    differed, raised or moved the flag...); a `correction` closes nothing by
    itself. Otherwise the flag stays open, no longer live, "to review", for
    another pit boss to confirm or dismiss; a matching recount by such a
    pit boss resolves it as well."""
    recount = not correction
    if not flag.live and not (flag.is_open and recount):
        return
    detail = {"computed": str(computed)}
    if recount:
        detail["count"] = count.pk
    fields = ["live"]
    if flag.is_open:
        if recount and may_decide(flag, user):
            flag.status, flag.decided_at, flag.decided_by = (
                Flag.Status.RESOLVED, now, user)
            fields += ["status", "decided_at", "decided_by"]
        elif flag.live:
            detail["to_review"] = True
            if recount:
                detail["recount"] = True
        else:
            return  # to review already: his recount changes nothing
    flag.live = False
    flag.save(update_fields=fields)
    FlagEvent.objects.create(flag=flag, at=now, user=user, action="resolved",
                             reason=why, detail=detail)


def cagnotte_recheck(*, session: TableSession, after) -> None:
    """After a correction: the counted box against the new computed total."""
    count = latest_count(session)
    if count is None:
        return
    computed = session_commission(session)
    target = after.plan.target
    _variance_flag(session, count, count.counted, computed,
                   user=after.revision.corrected_by,
                   why=f"after correction of coup {target.seq} of shoe "
                   f"{target.shoe.number}", correction=True)


def cagnotte_attest(*, count: CagnotteCount, user, statement: str = "certifié exact",
                    device: str = "") -> CagnotteAttestation:
    statement = (statement or "").strip() or "certifié exact"
    with guard(user=user, device=device):
        session = (TableSession.objects.select_for_update(no_key=True)
                   .get(pk=count.session_id))
        seal_check(session)
        latest = latest_count(session)
        if latest is None or latest.pk != count.pk:
            raise Conflict("count", "only the latest count of a session can be "
                           "attested")
        if session_locked(session):
            raise Conflict("count", "this count is already attested")
        if count.counted_by_id == getattr(user, "pk", None):
            raise Forbidden("count", "four eyes: you cannot attest your own count")
        variance = _variance_flag_of(session)
        if variance is not None:
            flag_state_check(variance)
        if variance is not None and variance.is_open:
            raise Conflict(
                "flag",
                f"the variance flag {variance.pk} of this count is open "
                f"({variance.message}): a pit boss decides it before the count "
                "is attested",
            )
        attestation = CagnotteAttestation.objects.create(
            count=count, attested_by=user, attested_at=timezone.now(),
            statement=statement[:100])
        log_action(
            action="audit.cagnotte.attested", user=user, device=device, obj=count,
            rows=[attestation],
            new={"session": session.pk, "counted": count.counted,
                 "statement": attestation.statement, "locked": True,
                 **_decided(variance)})
    return attestation


def _variance_flag_of(session: TableSession) -> Flag | None:
    # Locked: a recount or a correction moving it is serialised by the
    # session's lock already; this keeps a decision from racing the attest.
    return (Flag.objects.select_for_update(no_key=True)
            .filter(ident=f"c:{session.pk}").first())


def _decided(flag: Flag | None) -> dict:
    """What the attestation stands on, for its log row: the variance flag as
    decided (none when the box matched from the first count)."""
    if flag is None:
        return {}
    return {"variance_flag": flag.pk, "variance_flag_status": flag.status}
