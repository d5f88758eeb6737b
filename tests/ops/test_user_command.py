"""`manage.py user add NAME --role ROLE` (issue 36): the first manager of a
new installation, made from the command line, trail-logged like any user
and role change (casino/accounts.py)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from casino.models import ChangeLog
from casino.roles import ROLES
from casino.trail import trail_verify

GOOD = "a-long-enough-secret-42"


def _file(tmp_path, text: str) -> str:
    path = tmp_path / "pw"
    path.write_text(text)
    return str(path)


def _add(*args: str) -> str:
    out = io.StringIO()
    call_command("user", "add", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("role", ROLES)
def test_add_makes_a_user_with_the_role(db, tmp_path, role):
    from django.contrib.auth.models import User

    out = _add("first", "--role", role, "--password-file",
               _file(tmp_path, GOOD + "\n"))
    user = User.objects.get(username="first")
    assert f"role {role}" in out
    assert list(user.groups.values_list("name", flat=True)) == [role]
    # the newline ends the line; it is not part of the password
    assert user.check_password(GOOD)
    assert not user.is_superuser and not user.is_staff


def test_the_change_is_in_the_trail_naming_the_command(db, tmp_path):
    from django.contrib.auth.models import User

    _add("boss", "--role", "manager", "--password-file", _file(tmp_path, GOOD))
    user = User.objects.get(username="boss")
    rows = list(ChangeLog.objects.filter(object_id=str(user.pk)).order_by("id"))
    assert [r.action for r in rows] == ["auth.user.created",
                                        "auth.user.roles_added"]
    assert rows[1].new == {"roles": ["manager"]}
    assert all(r.device.startswith("manage.py user add") for r in rows)
    assert GOOD not in str([r.new for r in rows])
    assert trail_verify().ok


def test_an_unknown_role_is_refused_naming_it(db, tmp_path):
    from django.contrib.auth.models import User

    with pytest.raises(CommandError, match="unknown role 'boss'.*manager"):
        _add("x", "--role", "boss", "--password-file", _file(tmp_path, GOOD))
    assert not User.objects.filter(username="x").exists()


def test_an_existing_name_or_a_weak_password_writes_nothing(db, tmp_path, manager):
    from django.contrib.auth.models import User

    before = ChangeLog.objects.count()
    with pytest.raises(CommandError, match="exists already"):
        _add(manager.username, "--role", "auditor", "--password-file",
             _file(tmp_path, GOOD))
    with pytest.raises(CommandError, match="password:.*too short"):
        _add("weak", "--role", "auditor", "--password-file",
             _file(tmp_path, "abc"))
    with pytest.raises(CommandError, match="--password-file"):
        _add("nofile", "--role", "auditor", "--password-file",
             str(tmp_path / "missing"))
    assert not User.objects.filter(username__in=["weak", "nofile"]).exists()
    assert ChangeLog.objects.count() == before


def test_the_password_is_asked_twice(db, monkeypatch):
    from django.contrib.auth.models import User

    answers = iter([GOOD, GOOD + "x"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    with pytest.raises(CommandError, match="differ"):
        _add("typo", "--role", "croupier")
    assert not User.objects.filter(username="typo").exists()
    answers = iter([GOOD, GOOD])
    _add("typo", "--role", "croupier")
    assert User.objects.get(username="typo").check_password(GOOD)
