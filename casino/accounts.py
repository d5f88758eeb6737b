"""User and role changes go to the trail, whatever path made them (the admin,
a management command, the shell). This is the one place where signals write
the log: a user row has no service of ours in front of it, and a role change
the trail missed would be the one an auditor asks about.

Who made the change comes from `ActorMiddleware` (the signed-in user and his
device for the request being served); outside a request it is unknown.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models.signals import (
    m2m_changed,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)

from .changelog import log_action
from .continuity import _at_top, alarm, deleted, seal_check
from .errors import RecordChanged
from .trail import chain_head, ledger_digest

TRACKED = ("username", "first_name", "last_name", "email", "is_active", "is_staff",
           "is_superuser")
_actor: ContextVar[tuple] = ContextVar("casino_actor", default=(None, ""))


class ActorMiddleware:
    """Remember who is acting in this request, for the rows signals write."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        device = (request.headers.get("X-Device")
                  or request.headers.get("User-Agent") or "")[:200]
        token = _actor.set((user if user and user.is_authenticated else None,
                            device))
        try:
            return self.get_response(request)
        finally:
            _actor.reset(token)


@contextmanager
def acting(user=None, device: str = ""):
    """Who acts, outside a request (a management command): the trail rows
    the signals below write while it lasts name this user and device."""
    token = _actor.set((user, device[:200]))
    try:
        yield
    finally:
        _actor.reset(token)


def _log(**kwargs) -> None:
    actor, device = _actor.get()
    with transaction.atomic():
        log_action(user=actor, device=device, **kwargs)


def _snapshot(user) -> dict:
    return {f: getattr(user, f) for f in TRACKED}


def _checked_db_row(sender, instance):
    """The row as the database has it, checked against its last sealed state
    (casino/continuity.py); None for a new row. A row changed outside the app
    is not written over: the save is refused and the alarm raised."""
    if instance.pk is None or instance._state.adding:
        return None
    row = sender._base_manager.filter(pk=instance.pk).first()
    if row is None:
        return None
    try:
        seal_check(row)
    except RecordChanged as exc:
        actor, device = _actor.get()
        if _at_top():
            alarm(exc, user=actor, device=device)
        raise
    return row


def _chain_first(instance) -> None:
    """A bound row saved outside a transaction (Django's password-change
    page, the tablet's preferences, a shell): Django commits the row before
    its post_save writes the trail row. Under a held chain the trail row then
    fails (503 "nothing was written") over a row already written, which
    verify_trail would name as changed behind the app's back. So such a save
    that will be logged waits for the chain first, as its trail row would: a
    held chain refuses it before anything is written. (A save inside
    transaction.atomic() needs none of this: the row and its trail row commit
    together. Taking the lock outside a transaction releases it at once;
    only a hold taken in the instant between this and the trail row is
    left.)"""
    connection = transaction.get_connection()
    if connection.in_atomic_block or connection.vendor != "postgresql":
        return
    before = instance.__dict__.get("_trail_before")
    if before is not None and ledger_digest(instance) == before:
        return  # only bookkeeping (a sign-in's last_login): no trail row
    chain_head(connection)


def _before(sender, instance, update_fields=None, **kwargs):
    row = _checked_db_row(sender, instance)
    instance.__dict__["_trail_before"] = (
        row.__dict__["_trail_before"] if row is not None else None)
    _chain_first(instance)
    instance._trail_old = None if row is None else {
        **_snapshot(row), "password": row.password}


def _after(sender, instance, created, update_fields=None, **kwargs):
    if created:
        _log(action="auth.user.created", obj=instance, new=_snapshot(instance))
        return
    old = getattr(instance, "_trail_old", None)
    if old is None:
        return
    new = _snapshot(instance)
    before = {k: old[k] for k in TRACKED if old[k] != new[k]}
    after = {k: new[k] for k in before}
    if old["password"] != instance.password:
        before["password"], after["password"] = "(set)", "(changed)"
    if before or ledger_digest(instance) != instance.__dict__["_trail_before"]:
        _log(action="auth.user.changed", obj=instance, old=before, new=after)
    # A password change (the page, `changepassword`, the admin, set_password
    # anywhere) or a deactivation revokes the user's API tokens: a tablet
    # left signed in, or stolen, must not outlive it (casino/tokens.py).
    if "password" in before or (old["is_active"] and not instance.is_active):
        from .tokens import tokens_revoke_for_account

        why = "password changed" if "password" in before else "user deactivated"
        actor, device = _actor.get()
        with transaction.atomic():
            tokens_revoke_for_account(instance, actor=actor, device=device,
                                      reason=why)


# -- the other rows a decision reads: bound whatever path writes them --------------

def _bound_before(sender, instance, **kwargs):
    row = _checked_db_row(sender, instance)
    instance.__dict__["_trail_before"] = (
        row.__dict__["_trail_before"] if row is not None else None)
    _chain_first(instance)


def _bound_after(sender, instance, created, **kwargs):
    if not created and ledger_digest(instance) == instance.__dict__.get(
        "_trail_before"
    ):
        return  # only bookkeeping changed (beat's last run, say)
    label = instance._meta.label_lower
    _log(action=f"{label}.{'created' if created else 'changed'}", obj=instance)


def _bound_before_delete(sender, instance, **kwargs):
    row = _checked_db_row(sender, instance)
    instance._trail_deleted = None if row is None else deleted(row)


def _bound_after_delete(sender, instance, **kwargs):
    gone = getattr(instance, "_trail_deleted", None)
    if gone is not None:
        _log(action=f"{gone[0]}.deleted", deleted=[gone],
             new={"key": gone[1]})


def _links(through, instance, reverse, pk_set):
    """The through rows an m2m change names (user.groups.add(...) or
    group.user_set.add(...), and the grants' twins)."""
    source, target = _ends(through)
    mine, theirs = (target, source) if reverse else (source, target)
    rows = through._base_manager.filter(**{mine: instance.pk})
    if pk_set is not None:
        rows = rows.filter(**{f"{theirs}__in": pk_set})
    return list(rows.order_by("pk"))


def _ends(through) -> tuple[str, str]:
    fks = [f.attname for f in through._meta.concrete_fields if f.is_relation]
    return fks[0], fks[1]


def _m2m(sender, instance, action, reverse, pk_set, **kwargs):
    if action in ("pre_remove", "pre_clear"):
        rows = _links(sender, instance, reverse,
                      pk_set if action == "pre_remove" else None)
        checked = [_checked_db_row(sender, row) for row in rows]
        instance.__dict__.setdefault("_trail_unlinked", []).extend(
            deleted(r) for r in checked if r is not None)
    elif action == "post_add" and pk_set:
        rows = _links(sender, instance, reverse, pk_set)
        _log(action=f"{sender._meta.label_lower}.added", obj=None, rows=rows,
             new={"rows": [r.pk for r in rows]})
    elif action in ("post_remove", "post_clear"):
        gone = instance.__dict__.pop("_trail_unlinked", [])
        if gone:
            _log(action=f"{sender._meta.label_lower}.removed", deleted=gone,
                 new={"rows": [int(key) for _, key, _ in gone]})


def _roles(sender, instance, action, reverse, pk_set, **kwargs):
    if action not in ("post_add", "post_remove", "pre_clear"):
        return
    verb = {"post_add": "roles_added", "post_remove": "roles_removed",
            "pre_clear": "roles_removed"}[action]
    user_model = get_user_model()
    if not reverse:  # user.groups.add(...)
        if action == "pre_clear":
            pk_set = set(instance.groups.values_list("pk", flat=True))
        names = sorted(Group.objects.filter(pk__in=pk_set or ())
                       .values_list("name", flat=True))
        if names:
            _log(action=f"auth.user.{verb}", obj=instance, new={"roles": names},
                 bind=False)
        return
    # group.user_set.add(...): one row per user concerned
    if action == "pre_clear":
        pk_set = set(instance.user_set.values_list("pk", flat=True))
    for user in user_model.objects.filter(pk__in=pk_set or ()):
        _log(action=f"auth.user.{verb}", obj=user, new={"roles": [instance.name]},
             bind=False)


def bound_models() -> list:
    """Models bound through their signals here (not through a service)."""
    from django.apps import apps

    from .models import ApiToken

    out = [Group, ApiToken, apps.get_model("tablet", "TabletProfile")]
    beat = ("PeriodicTask", "CrontabSchedule", "IntervalSchedule",
            "SolarSchedule", "ClockedSchedule")
    out += [apps.get_model("django_celery_beat", name) for name in beat]
    return out


def connect() -> None:
    user_model = get_user_model()
    pre_save.connect(_before, sender=user_model, dispatch_uid="casino_user_before")
    post_save.connect(_after, sender=user_model, dispatch_uid="casino_user_after")
    pre_delete.connect(_bound_before_delete, sender=user_model,
                       dispatch_uid="casino_user_before_delete")
    post_delete.connect(_bound_after_delete, sender=user_model,
                        dispatch_uid="casino_user_after_delete")
    m2m_changed.connect(_roles, sender=user_model.groups.through,
                        dispatch_uid="casino_user_roles")
    for through in (user_model.groups.through,
                    user_model.user_permissions.through,
                    Group.permissions.through):
        m2m_changed.connect(_m2m, sender=through,
                            dispatch_uid=f"casino_m2m_{through._meta.label_lower}")
    for model in bound_models():
        uid = model._meta.label_lower
        pre_save.connect(_bound_before, sender=model, dispatch_uid=f"b_{uid}")
        post_save.connect(_bound_after, sender=model, dispatch_uid=f"a_{uid}")
        pre_delete.connect(_bound_before_delete, sender=model,
                           dispatch_uid=f"bd_{uid}")
        post_delete.connect(_bound_after_delete, sender=model,
                            dispatch_uid=f"ad_{uid}")
