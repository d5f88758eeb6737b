"""Four eyes on a flag: who may not decide it (confirm, dismiss) because his
own work raised or shaped it. The decisions (audit/services/flags.py) and a
recount that would close a cagnotte variance (audit/services/cagnotte.py)
ask the same question here; the pages and the API go through them."""

from __future__ import annotations

from django.db.models import Q

from tables.models import Coup

from ..models import Flag

# History steps whose user raised the flag or put it where it stands now.
RAISING = ("raised", "raised_again", "moved")
FOUR_EYES = ("four eyes: this flag was raised by your own work (your entry, "
             "count or correction); another pit boss must decide it")


def decision_barred(flag: Flag) -> set[int]:
    """Who may not confirm or dismiss this flag (four eyes): whoever raised
    it (`author`), the croupier concerned and the one who entered its coup,
    whoever wrote the revision it stands on (a correction or a re-settle),
    whoever raised it again or moved it onto his own revision or recount, or
    whose correction made it disappear ("resolved by a correction, to
    review") (the flag's history), whoever made the count a variance flag is
    about, and the pit boss who vouched for the coup by accepting it on its
    croupier's behalf after a relief."""
    barred = {flag.author_id, flag.croupier_id}
    barred.update(flag.events.filter(
        Q(action__in=RAISING) | Q(action="resolved", detail__to_review=True))
        .values_list("user_id", flat=True))
    if flag.coup_id is not None:
        coup = Coup.objects.only(
            "entered_by_id", "corrected_by_id", "accepted_by_id").get(pk=flag.coup_id)
        barred.update((coup.entered_by_id, coup.corrected_by_id, coup.accepted_by_id))
    if flag.count_id is not None:
        barred.add(flag.count.counted_by_id)
    barred.discard(None)
    return barred


def may_decide(flag: Flag, user) -> bool:
    """Four eyes only (the role is casino.roles' business): False when the
    user's own work raised or shaped the flag."""
    return getattr(user, "pk", None) not in decision_barred(flag)
