"""User and role changes go to the trail, whatever path made them (the admin,
a management command, the shell). This is the one place where signals write
the log: a user row has no service of ours in front of it, and a role change
the trail missed would be the one an auditor asks about.

Who made the change comes from `ActorMiddleware` (the signed-in user and his
device for the request being served); outside a request it is unknown.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models.signals import m2m_changed, post_save, pre_save

from .changelog import log_action

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


def _log(**kwargs) -> None:
    actor, device = _actor.get()
    with transaction.atomic():
        log_action(user=actor, device=device, **kwargs)


def _snapshot(user) -> dict:
    return {f: getattr(user, f) for f in TRACKED}


def _before(sender, instance, update_fields=None, **kwargs):
    if instance.pk is None or (update_fields and set(update_fields) == {"last_login"}):
        instance._trail_before = None
        return
    old = sender.objects.filter(pk=instance.pk).values(*TRACKED, "password").first()
    instance._trail_before = old


def _after(sender, instance, created, update_fields=None, **kwargs):
    if created:
        _log(action="auth.user.created", obj=instance, new=_snapshot(instance))
        return
    old = getattr(instance, "_trail_before", None)
    if old is None:
        return
    new = _snapshot(instance)
    before = {k: old[k] for k in TRACKED if old[k] != new[k]}
    after = {k: new[k] for k in before}
    if old["password"] != instance.password:
        before["password"], after["password"] = "(set)", "(changed)"
    if before:
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
            _log(action=f"auth.user.{verb}", obj=instance, new={"roles": names})
        return
    # group.user_set.add(...): one row per user concerned
    if action == "pre_clear":
        pk_set = set(instance.user_set.values_list("pk", flat=True))
    for user in user_model.objects.filter(pk__in=pk_set or ()):
        _log(action=f"auth.user.{verb}", obj=user, new={"roles": [instance.name]})


def connect() -> None:
    user_model = get_user_model()
    pre_save.connect(_before, sender=user_model, dispatch_uid="casino_user_before")
    post_save.connect(_after, sender=user_model, dispatch_uid="casino_user_after")
    m2m_changed.connect(_roles, sender=user_model.groups.through,
                        dispatch_uid="casino_user_roles")
