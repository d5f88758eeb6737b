"""Correcting a coup: a new revision, and every later coup re-settled.

A coup is never edited. A pit boss's correction writes revision r+1 of that
coup (cards, stakes, declared bank); the engine runs again; then every later
coup of the session is re-computed in dealing order (shoe by shoe, coup by
coup), because the bank carried forward, the card counts of the shoe and a
bank passed on to the next banker all flow from one coup to the next. A later
coup whose record comes out different gets its own new revision, reason
"re-settled after correction of coup N"; one that comes out the same keeps
its revision (writing an identical one would only add noise). Banker turns,
shoes and the daily rollups follow in the same transaction.

Who won may change. The turn structure as recorded is a fact (who held the
bank, when a turn ended, which bank the next banker opened with): money is
re-computed along it, never a new structure invented. Where the corrected
outcome contradicts it, the plan lists an *issue* and the caller raises a
flag for a pit boss:

- a coup now lost by the banker, yet his turn went on: the later coups of
  that turn are settled on the banks recorded at the table;
- a coup now won by the banker that ended his turn as lost: the turn's
  closing amount becomes bank + garage, the record of how it ended stays;
- a recorded announcement that no longer fits the re-computed bank (a banco
  solo of the old bank): the stake is covered as a plain stake.

`coup_correct_preview` computes the plan and writes nothing; its digest is
what the pit boss confirms, and `coup_correct` refuses if the table moved on
meanwhile (a new coup, another correction) so the money shown is the money
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone
from django.utils.translation import gettext

from casino.changelog import chain_hold, log_actions
from casino.continuity import guard, seal_check

from ..errors import Conflict, Forbidden, Invalid
from ..models import BankerTurn, Coup, Finding, Shoe, Stake
from ..rollups import rollup_apply
from .correction_plan import CorrectionPlan, CoupChange, TurnChange
from .coups import StakeInput
from .resettle import _plan

__all__ = [
    "CorrectionPlan",
    "CorrectionResult",
    "CoupChange",
    "TurnChange",
    "coup_correct",
    "coup_correct_preview",
    "correction_barred",
]


@dataclass(frozen=True)
class CorrectionResult:
    plan: CorrectionPlan
    revision: Coup  # the corrected coup's new revision
    revisions: list[Coup]  # every new revision, in dealing order


def coup_correct_preview(
    *, coup: Coup, punter: Sequence[str], banker: Sequence[str],
    stakes: Sequence[StakeInput], declared_bank: Decimal | None = None,
) -> CorrectionPlan:
    """The correction and everything it re-settles, with the money difference.
    Writes nothing."""
    return _plan(coup, punter, banker, stakes, declared_bank)


def correction_barred(coup: Coup, user) -> str:
    """Why `user` may not correct `coup` (four eyes), or "" when he may: he
    entered it, or accepted it on its croupier's behalf. Asked by
    coup_correct and, before any form is shown, by the pages that link to a
    correction and the correction page itself."""
    pk = getattr(user, "pk", None)
    if pk is None:
        return ""
    if coup.entered_by_id == pk:
        return gettext("four eyes: you entered this coup, another pit boss must "
                       "correct it")
    if coup.accepted_by_id is not None and coup.accepted_by_id == pk:
        return gettext("four eyes: you accepted this coup on its croupier's "
                       "behalf, another pit boss must correct it")
    return ""


def coup_correct(
    *, coup: Coup, user, reason: str, punter: Sequence[str], banker: Sequence[str],
    stakes: Sequence[StakeInput], declared_bank: Decimal | None = None,
    plan_digest: str | None = None, device: str = "",
) -> CorrectionResult:
    """Write the correction as a new revision and re-settle what follows."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", "a correction needs a reason")
    barred = correction_barred(coup, user)
    if barred:
        raise Forbidden("coup", barred)
    with guard(user=user, device=device):
        # Same lock order as coup_record (shoe, then turn): no deadlock.
        shoes = list(Shoe.objects.select_for_update(no_key=True)
                     .filter(session_id=coup.shoe.session_id).order_by("pk"))
        turns = list(BankerTurn.objects.select_for_update(no_key=True)
                     .filter(session_id=coup.shoe.session_id).order_by("pk"))
        # what the correction re-settles from must be what the trail sealed
        seal_check(*shoes, *turns)
        checked = {(type(r), r.pk): r.__dict__["_trail_before"]
                   for r in (*shoes, *turns)}
        chain_hold()  # then the rollup cells a coup's writer may touch too
        plan = _plan(coup, punter, banker, stakes, declared_bank)
        if plan_digest is not None and plan_digest != plan.digest:
            raise Conflict("plan_digest", "the table moved on since the preview; "
                           "preview the correction again")
        return _apply(plan, user=user, reason=reason, device=device,
                      checked=checked)


def _apply(plan: CorrectionPlan, *, user, reason: str, device: str, checked: dict):
    now = timezone.now()
    target = plan.target
    revisions, logs = [], []
    for ch in plan.changed:
        old = ch.old
        why = reason if ch.corrected else (
            f"re-settled after correction of coup {target.seq} "
            f"of shoe {target.shoe.number}")
        values = {k: v for k, v in ch.values.items() if not k.startswith("_")}
        new = Coup.objects.create(
            shoe_id=old.shoe_id, turn_id=old.turn_id, seq=old.seq,
            revision=old.revision + 1, rules_id=old.rules_id,
            tableau_version=old.tableau_version, gaming_day=old.gaming_day,
            created_at=old.created_at, entered_by_id=old.entered_by_id,
            accepted_by_id=old.accepted_by_id, accepted_reason=old.accepted_reason,
            device=old.device, banker_seat=old.banker_seat,
            finding_count=len(ch.findings), corrected_by=user, corrected_at=now,
            correction_reason=why, **values)
        stakes = Stake.objects.bulk_create([Stake(coup=new, **s) for s in ch.stakes])
        findings = Finding.objects.bulk_create([
            Finding(coup=new, code=f.code, severity=f.severity, side=f.side or "",
                    detail=dict(f.detail), message=f.message,
                    tableau_version=old.tableau_version)
            for f in ch.findings])
        table_id = old.shoe.session.table_id
        rollup_apply(old, ch.old_codes, table_id=table_id, sign=-1)
        rollup_apply(new, [f.code for f in ch.findings], table_id=table_id)
        revisions.append(new)
        summary = ch.to_dict()
        logs.append({
            "action": "tables.coup.corrected" if ch.corrected
            else "tables.coup.resettled",
            "obj": new, "reason": why, "old": summary["old"],
            "new": {**summary["new"], "revision": new.revision,
                    "supersedes": old.pk},
            "rows": [*stakes, *findings],
        })
    for shoe_id, state in plan.shoes.items():
        Shoe.objects.filter(pk=shoe_id).update(**state)
    for tc in plan.turns:
        BankerTurn.objects.filter(pk=tc.turn.pk).update(**tc.new)
    # Their state as written, bound to the correction's last log row.
    state = [*Shoe.objects.filter(pk__in=list(plan.shoes)),
             *BankerTurn.objects.filter(pk__in=[tc.turn.pk for tc in plan.turns])]
    for row in state:  # found as sealed when locked (coup_correct)
        row.__dict__["_trail_before"] = checked[(type(row), row.pk)]
    body = plan.to_dict()
    logs.append({
        "rows": state,
        "action": "tables.coup.correction_applied", "obj": revisions[0],
        "reason": reason,
        "new": {"commission_delta": body["commission_delta"],
                "payout_delta_by_seat": body["payout_delta_by_seat"],
                "revisions": [r.pk for r in revisions], "turns": body["turns"],
                "issues": plan.issues, "digest": body["digest"]},
    })
    # Logged last, in one batch: the trail's lock is held from here to the
    # commit (a shoe's worth of re-settled coups is one insert).
    log_actions([{"user": user, "device": device, **row} for row in logs])
    return CorrectionResult(plan, revisions[0], revisions)
