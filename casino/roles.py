"""Roles are Django groups. One table says which role may do what; the API
permission classes and the pages read it, and a test walks it.

`PERMISSIONS` (here) says which roles hold a capability; `casino.access.ROUTES`
says which capability each URL and method needs. tests/audit/test_access.py
walks every URL pattern of the project for every role against both.

Segregation of duties (issue 4): a croupier enters coups only at the session
he runs (see `works_at`); a pit boss runs the floor, reviews, corrects, counts
the cagnotte and opens/closes sessions, but enters no coup; a manager keeps
house rules and reports and attests counts, and enters no coup; an auditor
reads everything and changes nothing.
"""

from __future__ import annotations

from functools import cache

from rest_framework.permissions import BasePermission

CROUPIER = "croupier"
PITBOSS = "pitboss"
MANAGER = "manager"
AUDITOR = "auditor"
ROLES = (CROUPIER, PITBOSS, MANAGER, AUDITOR)

# capability -> roles allowed (superusers — the admin role — may do everything)
PERMISSIONS: dict[str, frozenset[str]] = {
    "table.read": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
    "table.manage": frozenset({MANAGER}),
    "session.open": frozenset({CROUPIER, PITBOSS}),
    "session.close": frozenset({PITBOSS}),
    "shoe.manage": frozenset({CROUPIER, PITBOSS}),
    "turn.manage": frozenset({CROUPIER, PITBOSS}),
    # Coup entry is the croupier's alone (issue 4: the pit boss reviews and
    # corrects what a croupier entered; nobody reviews his own entry).
    "coup.record": frozenset({CROUPIER}),
    # A coup queued on a tablet under a croupier who was relieved before it
    # was sent: a pit boss stores it on his behalf, with a reason (issue 11).
    # The coup stays the croupier's; the pit boss enters none of his own.
    "coup.accept": frozenset({PITBOSS}),
    "coup.read": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
    "engine.check": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
    # Pit boss review (issue 4).
    "session.assign": frozenset({CROUPIER, PITBOSS}),  # croupier: relief only
    "floor.view": frozenset({PITBOSS, MANAGER, AUDITOR}),
    "flag.read": frozenset({PITBOSS, MANAGER, AUDITOR}),
    "flag.review": frozenset({PITBOSS}),
    "coup.correct": frozenset({PITBOSS}),
    # A shoe held by a critical finding (house rule hold_on_error) plays on
    # only when a pit boss releases it (issue 13).
    "shoe.release": frozenset({PITBOSS}),
    "cagnotte.read": frozenset({PITBOSS, MANAGER, AUDITOR}),
    "cagnotte.count": frozenset({PITBOSS}),
    "cagnotte.attest": frozenset({MANAGER}),
    "stats.read": frozenset({PITBOSS, MANAGER, AUDITOR}),
    "trail.read": frozenset({MANAGER, AUDITOR}),
    # Reports (issue 5): managers and the auditors/regulator read and request;
    # only a manager starts a re-audit (it writes findings).
    "report.read": frozenset({MANAGER, AUDITOR}),
    "report.request": frozenset({MANAGER, AUDITOR}),
    "reaudit.run": frozenset({MANAGER}),
    # Statistical surveillance (issue 14): the manager and the auditor read
    # the page, the runs and their evidence. A run raises alerts into the pit
    # boss's queue (it changes what he must review), so only a manager asks
    # for one over a period, as only he starts a re-audit; the auditor, who
    # changes nothing, reads the nightly runs and the manager's. Only a
    # manager runs at another false discovery rate than the house's
    # (settings.SURVEILLANCE_FDR). The pit boss decides the alerts in his
    # queue, on the flag's page (its evidence and chart), not here.
    "surveillance.read": frozenset({MANAGER, AUDITOR}),
    "surveillance.run": frozenset({MANAGER}),
    "surveillance.fdr": frozenset({MANAGER}),
    # Revoking another user's API token (issues 6, 11): the pit boss on the
    # floor and the manager above him, each only for a lower role (RANKS
    # below); anyone may revoke his own (casino/tokens.py).
    "token.revoke": frozenset({PITBOSS, MANAGER}),
}

# The chain of command for revoking a token (issue 11): croupier < pit boss <
# manager < admin, so the floor cannot cut off the people who oversee it. The
# auditor (the regulator's reader) ranks with the manager: a pit boss must not
# be able to lock out whoever audits him. A user with no role ranks lowest.
RANKS: dict[str, int] = {CROUPIER: 1, PITBOSS: 2, MANAGER: 3, AUDITOR: 3}
ADMIN_RANK = 4


def _sealed_roles(user) -> list[str]:
    """The user's group names, read with the rows that grant them, each
    checked against the seal the trail holds for it now, read in the same
    statement: a membership or a group inserted, renamed or put back by
    hand with the database's credentials grants nothing (RecordChanged, and
    the alarm: casino/continuity.py). One query, in SQL made once: the ORM's
    compiling it cost a tenth of a coup's instructions (bench/count_coup.py)."""
    from django.db import connections, router

    through, sql = _roles_query()
    alias = router.db_for_read(through)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [user.pk])
        rows = cursor.fetchall()
    return _checked(user, *role_rows(alias, rows))


def role_rows(alias: str, rows) -> tuple[list, list[str]]:
    """([(row, its last sealed digest)...] of each membership and its group,
    the groups' names), from rows holding every concrete column of the
    membership, then of its group, then their seals (what _roles_query
    selects; casino/tokenauth.py selects the same after the token's and the
    user's). A row without a membership (a LEFT JOIN's NULLs) is skipped."""
    from django.contrib.auth.models import Group

    from .continuity import with_seals
    from .rawrows import reader

    links, groups = reader(_roles_query()[0], alias), reader(Group, alias)
    width = links.width
    end = width + groups.width
    objs, read, names = [], [], []
    for row in rows:
        if row[0] is None:
            continue
        group = groups.build(row[width:end])
        objs += [links.build(row[:width]), group]
        read += row[end:end + 2]
        names.append(group.name)
    return with_seals(objs, read), names


def _checked(user, pairs: list, names: list[str]) -> list[str]:
    from .continuity import trusted_as_sealed

    trusted_as_sealed(pairs, user=user)
    return names


def roles_read_with(user, rows: tuple[list, list[str]]) -> None:
    """The user's memberships and their groups with their seals (role_rows),
    read from the database in this request's own statement with his token
    (casino/tokenauth.py): kept on this request's user object, checked and
    named at the first user_roles(), as if read then. Nothing outside the
    request (Redis, another request) can put them there."""
    user._casino_role_rows = rows


@cache
def _roles_query():
    """(User.groups' through model, the SQL of a user's memberships with
    their groups: every concrete column of both, in the models' order, then
    the last sealed digest of each, continuity.sealed_sql)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    through = get_user_model().groups.through
    return through, (
        f"SELECT {roles_columns('l', 'g')} "
        f'FROM "{through._meta.db_table}" l '
        f'JOIN "{Group._meta.db_table}" g ON g."{Group._meta.pk.column}" = '
        f'l."{through._meta.get_field("group").column}" '
        f'WHERE l."{through._meta.get_field("user").column}" = %s '
        f'ORDER BY l."{through._meta.pk.column}"'
    )


def roles_columns(link: str, group: str) -> str:
    """The columns role_rows reads, of a membership and a group aliased as
    `link` and `group` in a statement."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from .continuity import sealed_sql

    through = get_user_model().groups.through
    columns = [f'{link}."{f.column}"' for f in through._meta.concrete_fields]
    columns += [f'{group}."{f.column}"' for f in Group._meta.concrete_fields]
    columns += [
        sealed_sql(through._meta.label_lower, f'{link}."{through._meta.pk.column}"'),
        sealed_sql(Group._meta.label_lower, f'{group}."{Group._meta.pk.column}"'),
    ]
    return ", ".join(columns)


def user_roles(user) -> frozenset[str]:
    """The user's roles, read from the database once per request (kept on
    the request's user object). Never from the shared cache: whoever can
    write to Redis could otherwise hand anyone any role, and a role removed
    or a membership changed by hand would outlive its removal there. One
    indexed query a request, or none when the token's own statement read them
    (roles_read_with)."""
    if not user or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_casino_roles", None)
    if cached is None:
        rows = getattr(user, "_casino_role_rows", None)
        if rows is not None:  # read once, for this request only
            del user._casino_role_rows
        cached = frozenset(
            _sealed_roles(user) if rows is None else _checked(user, *rows))
        user._casino_roles = cached
    return cached


def has_capability(user, capability: str) -> bool:
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return bool(user_roles(user) & PERMISSIONS[capability])


def rank(user, capability: str | None = None) -> int:
    """The user's place in RANKS (his highest role; the admin above all). With
    a capability, only the roles holding it count: a pit boss who also reads
    as an auditor revokes as a pit boss."""
    if not user or not user.is_authenticated:
        return 0
    if user.is_superuser:
        return ADMIN_RANK
    roles = user_roles(user)
    if capability is not None:
        roles = roles & PERMISSIONS[capability]
    return max((RANKS.get(role, 0) for role in roles), default=0)


def outranks(actor, target, capability: str) -> bool:
    """Whether ``actor`` may use ``capability`` on ``target``'s account: he
    holds it, and his role is strictly above every role of the target."""
    return has_capability(actor, capability) and rank(actor, capability) > rank(
        target
    )


def works_at(user, session) -> bool:
    """Whether ``user`` may act at ``session`` as its croupier: a croupier only
    at the session he runs (``session.croupier``, changed by a pit boss or by a
    logged relief take-over); pit bosses and admins anywhere."""
    if not user or not user.is_authenticated:
        return False
    if user.is_superuser or PITBOSS in user_roles(user):
        return True
    owner = getattr(session, "croupier_id", None)
    return owner is None or owner == user.pk


def Can(capability: str) -> type[BasePermission]:  # noqa: N802 - reads like a class
    """DRF permission class for one capability of the table above."""

    class _Can(BasePermission):
        message = f"Your role does not allow {capability}."

        def has_permission(self, request, view) -> bool:
            return has_capability(request.user, capability)

    _Can.__name__ = f"Can[{capability}]"
    return _Can
