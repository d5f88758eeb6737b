"""Who may act at a session, and whose table a croupier may read: the one
own-table check, asked by every service that writes to a session, by the API
views and by the tablet's pages alike (a page POST refused here is refused on
the API too, and the other way round).

"His own table", for a croupier whose only role is croupier:
- to act (open a shoe or a bank, pass it, close a shoe, enter a coup): the
  session he runs now (`casino.roles.works_at`; a relief becomes its croupier
  by a logged take-over);
- to read (a session, its shoes, turns and coups, the tablet's fragments):
  that session, and the sessions where he entered coups (the table he ran
  before a relief took it over). The table list stays readable: that is where
  he picks a table to open or take over.
Pit bosses, managers, auditors and admins read the whole floor; what they may
write is the role table's business (casino.roles.PERMISSIONS).
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from casino.roles import CROUPIER, PITBOSS, user_roles, works_at

from ..errors import Forbidden
from ..models import Coup

NOT_HIS_SESSION = (
    "you are not the croupier of this session: a pit boss hands it over, or "
    "take it over as the relief"
)
NOT_HIS_TABLE = (
    "a croupier reads his own table only: another croupier runs this session"
)


def croupier_check(user, session) -> None:
    """A croupier acts only at the session he runs (casino.roles.works_at).
    Services ask it of the session as read inside their own transaction;
    views ask it first, so that a refusal shows nothing of that session."""
    if not works_at(user, session):
        raise Forbidden("session", NOT_HIS_SESSION)


def hand_over_check(user, croupier_id: int | None) -> None:
    """Who may name the croupier of a session (open a table for him, hand a
    table to him): a pit boss or an admin, any croupier; a croupier, himself
    only (the relief). The API and the floor's pages ask it alike."""
    if user.is_superuser or PITBOSS in user_roles(user):
        return
    if croupier_id != user.pk:
        raise Forbidden("croupier", "a croupier can only take a table over himself")


def floor_wide(user) -> bool:
    """Whether the user reads every table: any role beside croupier."""
    if not user or not user.is_authenticated:
        return False
    return user.is_superuser or bool(user_roles(user) - {CROUPIER})


def _entered_there(user, session_ref: str):
    return Exists(
        Coup.objects.filter(shoe__session_id=OuterRef(session_ref), entered_by=user)
    )


def may_read(user, session) -> bool:
    if not user or not user.is_authenticated:
        return False
    if floor_wide(user) or works_at(user, session):
        return True
    return Coup.objects.filter(shoe__session_id=session.pk, entered_by=user).exists()


def read_check(user, session) -> None:
    """Refuse (403, naming the session) a croupier's read of another table's
    session, shoe, banker turn or tablet fragment."""
    if not may_read(user, session):
        raise Forbidden("session", NOT_HIS_TABLE)


def readable_sessions(user, queryset: QuerySet) -> QuerySet:
    """A session list as `user` may read it (see the module's docstring)."""
    if not user or not user.is_authenticated:  # the schema generator's request
        return queryset.none()
    if floor_wide(user):
        return queryset
    return queryset.filter(
        Q(croupier=user) | Q(croupier__isnull=True) | _entered_there(user, "pk")
    )


def readable_coups(user, queryset: QuerySet) -> QuerySet:
    """A croupier reads his own table's coups (those of sessions he runs or
    coups he entered); the pit, managers and auditors read them all."""
    if not user or not user.is_authenticated:  # the schema generator's request
        return queryset.none()
    if floor_wide(user):
        return queryset
    return queryset.filter(Q(shoe__session__croupier=user) | Q(entered_by=user))
