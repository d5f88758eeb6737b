"""Integrity: the alarm when a write finds a record changed outside the
application (casino/continuity.py), and the check that a flag's review state
is the one its decisions say.

Registered at start-up (audit.apps): casino raises the alarm through
`continuity.register_alarm`, and verify_trail runs the flags' check through
`trail.DERIVED_CHECKS` (casino imports no app)."""

from __future__ import annotations

from django.utils import timezone

from casino.changelog import chain_hold, log_action
from casino.errors import RecordChanged
from tables.models import BankerTurn, Shoe, Table, TableSession
from tables.services.floor import gaming_day_for

from ..models import Flag, FlagEvent

# What each step of a flag's history leaves its status at. Decisions
# (confirmed, dismissed) are bound to the trail; the others follow the coups.
STATUS_AFTER = {
    "raised": Flag.Status.OPEN,
    "raised_again": Flag.Status.OPEN,
    "confirmed": Flag.Status.CONFIRMED,
    "dismissed": Flag.Status.DISMISSED,
    "resolved": Flag.Status.RESOLVED,
}
DECISIONS = ("confirmed", "dismissed")


def to_review(event) -> bool:
    """A "resolved" step that closes nothing: a correction made the finding
    disappear, and the flag waits for a second pit boss (four eyes)."""
    return bool(event.action == "resolved" and (event.detail or {}).get("to_review"))


def _place(label: str, key: str) -> tuple:
    """(table, session, shoe) the record belongs to, as far as it says."""
    try:
        pk = int(key)
    except ValueError:
        return None, None, None
    if label == "tables.shoe":
        shoe = Shoe.objects.select_related("session").filter(pk=pk).first()
        if shoe:
            return shoe.session.table_id, shoe.session_id, shoe.pk
    if label == "tables.bankerturn":
        turn = BankerTurn.objects.select_related("session").filter(pk=pk).first()
        if turn:
            return turn.session.table_id, turn.session_id, None
    if label == "tables.tablesession":
        session = TableSession.objects.filter(pk=pk).first()
        if session:
            return session.table_id, session.pk, None
    if label == "tables.table" and Table.objects.filter(pk=pk).exists():
        return pk, None, None
    return None, None, None


def integrity_alarm(exc: RecordChanged, *, user=None, device: str = "") -> Flag | None:
    """A critical flag "record changed outside the app", once per record and
    state found, with its trail row."""
    ident = f"x:{exc.label}:{exc.key}:{(exc.found or '-')[:16]}"[:120]
    # the chain first (it serialises every writer of the trail): two requests
    # finding the same change at once raise one flag, the second sees it
    chain_hold()
    if Flag.objects.filter(ident=ident).exists():
        return None
    table_id, session_id, shoe_id = _place(exc.label, exc.key)
    now = timezone.now()
    table = Table.objects.select_related("rules").filter(pk=table_id).first()
    cutoff = table.rules.gaming_day_cutoff if table and table.rules else 6
    user = user if user is not None and user.is_authenticated else None
    flag = Flag.objects.create(
        ident=ident, kind=Flag.Kind.INTEGRITY, code="record_changed",
        severity="critical", message=str(exc)[:400], table_id=table_id,
        session_id=session_id, shoe_id=shoe_id,
        gaming_day=gaming_day_for(now, cutoff), raised_at=now,
    )
    FlagEvent.objects.create(
        flag=flag, at=now, user=user, action="raised",
        detail={"label": exc.label, "key": exc.key},
    )
    log_action(
        action="audit.integrity.record_changed", user=user, device=device,
        obj=flag, reason="a write found this record changed outside the application",
        new={"record": exc.label, "key": exc.key, "found": exc.found,
             "sealed": exc.sealed},
    )
    return flag


# -- a flag's review state against its history -----------------------------------

def replay(events) -> tuple[str, int | None, FlagEvent | None]:
    """A flag's (status, decided by, the step that set it) from its history
    in order: what the services do to it, step by step."""
    status, decider, by = Flag.Status.OPEN, None, None
    for e in events:
        if e.action in ("raised", "raised_again"):
            status, decider, by = Flag.Status.OPEN, None, e
        elif e.action in DECISIONS:
            status, decider, by = STATUS_AFTER[e.action], e.user_id, e
        elif to_review(e):
            continue  # resolved by a correction, to review: still open
        elif e.action == "resolved" and status == Flag.Status.OPEN:
            status, decider, by = Flag.Status.RESOLVED, e.user_id, e
    return status, decider, by


def flag_state_problem(flag: Flag, events) -> str | None:
    """What is wrong with a flag's status and decider against its history,
    or None. A status no step explains was set outside the app."""
    status, decider, by = replay(events)
    if flag.status != status:
        step = f"its history leaves it {status}" + (
            f" (event {by.pk}, '{by.action}')" if by else "")
        return (f"flag {flag.pk}: its status is {flag.status}, but {step}: "
                "changed outside the application")
    if status in DECISIONS and flag.decided_by_id != decider:
        return (f"flag {flag.pk}: decided by user {flag.decided_by_id}, but its "
                f"decision (event {by.pk}) is user {decider}'s: changed outside "
                "the application")
    return None


def flag_state_check(flag: Flag) -> None:
    """The write path's check before a decision is laid over a flag."""
    problem = flag_state_problem(flag, flag.events.order_by("id"))
    if problem:
        raise RecordChanged("audit.flag", str(flag.pk), problem.split(": ", 1)[1],
                            found=flag.status)


def flags_state_problems() -> list[str]:
    """verify_trail's check of every flag (trail.DERIVED_CHECKS)."""
    problems = []
    flags = Flag.objects.order_by("pk").only("pk", "status", "decided_by_id")
    events = (FlagEvent.objects.filter(action__in=STATUS_AFTER)
              .order_by("flag_id", "id")
              .only("pk", "flag_id", "action", "user_id", "detail")
              .iterator(chunk_size=5000))
    pending = next(events, None)
    for flag in flags.iterator(chunk_size=2000):
        mine = []
        while pending is not None and pending.flag_id <= flag.pk:
            if pending.flag_id == flag.pk:
                mine.append(pending)
            pending = next(events, None)
        problem = flag_state_problem(flag, mine)
        if problem:
            problems.append(problem)
    problems += resolved_grounds_problems()
    return problems


def resolved_grounds_problems() -> list[str]:
    """A flag resolved by the app (not decided: a legacy correction, a
    matching recount) must still stand on its grounds, which bound rows say:
    a finding flag's finding is gone from its coup's latest revision, a
    cagnotte flag's session was last counted without a variance. A
    "resolved" step and status inserted by hand to empty the queue fail
    here."""
    from django.db.models import Max

    from tables.models import Coup, Finding

    from ..models import CagnotteCount
    from .flag_raise import finding_key

    resolved = list(Flag.objects.filter(status=Flag.Status.RESOLVED)
                    .values_list("pk", "kind", "ident", "shoe_id", "seq",
                                 "session_id").order_by("pk"))
    problems = []
    findings = [r for r in resolved if r[1] == Flag.Kind.FINDING]
    for start in range(0, len(findings), 500):
        chunk = findings[start:start + 500]
        shoes = {r[3] for r in chunk}
        latest = {
            (row["shoe_id"], row["seq"]): row["top"]
            for row in Coup.objects.filter(shoe_id__in=shoes)
            .values("shoe_id", "seq").annotate(top=Max("revision"))
        }
        standing: set = set()
        for shoe_id, seq, revision, code, side, detail in Finding.objects.filter(
            coup__shoe_id__in=shoes
        ).values_list("coup__shoe_id", "coup__seq", "coup__revision", "code",
                      "side", "detail"):
            if latest.get((shoe_id, seq)) == revision:
                standing.add((shoe_id, seq, finding_key(code, side, detail or {})))
        for pk, _, ident, shoe_id, seq, _ in chunk:
            key = ident.split(":", 3)[3] if ident.count(":") >= 3 else ""
            if (shoe_id, seq, key) in standing:
                problems.append(
                    f"flag {pk}: resolved, but its finding stands in the latest "
                    f"revision of coup {seq} of shoe {shoe_id}: changed outside "
                    "the application")
    sessions = {r[5]: r[0] for r in resolved if r[1] == Flag.Kind.CAGNOTTE}
    last: dict = {}
    for session_id, variance in (CagnotteCount.objects
                                 .filter(session_id__in=sessions)
                                 .order_by("session_id", "pk")
                                 .values_list("session_id", "variance")):
        last[session_id] = variance
    for session_id, pk in sorted(sessions.items(), key=lambda i: i[1]):
        if last.get(session_id) != 0:
            problems.append(
                f"flag {pk}: resolved, but session {session_id}'s last count "
                "differs from its computed cagnotte (or there is none): changed "
                "outside the application")
    return problems
