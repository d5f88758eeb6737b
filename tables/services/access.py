"""Who may act at a session: asked by every service that writes to one."""

from __future__ import annotations

from casino.roles import works_at

from ..errors import Forbidden


def croupier_check(user, session) -> None:
    """A croupier acts only at the session he runs (casino.roles.works_at).
    Services ask it of the session as read inside their own transaction."""
    if not works_at(user, session):
        raise Forbidden(
            "session",
            "you are not the croupier of this session: a pit boss hands it "
            "over, or take it over as the relief",
        )
