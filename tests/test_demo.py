"""`make run`'s demo casino: the users a newcomer needs (two pit bosses, so
that four eyes can be tried), their passwords printed once, last, in a box."""

from __future__ import annotations

from io import StringIO

from django.contrib.auth.models import User
from django.core.management import call_command


def test_the_demo_prints_every_password_once_in_a_box_last(db):
    out = StringIO()
    call_command("demo", stdout=out)
    lines = out.getvalue().rstrip("\n").splitlines()
    box = lines[lines.index(next(x for x in lines if x.startswith("+--"))):]
    assert box[0] == box[2] == box[-1] and set(box[0]) == {"+", "-"}
    assert "passwords shown only this once" in box[1]
    users = {line.strip("| ").split()[0]: line.strip("| ").split()
             for line in box[3:-1] if not line.startswith("| sign in")}
    assert set(users) == {"croupier", "pitboss", "pitboss2", "manager",
                          "auditor", "admin"}
    assert users["pitboss2"][1] == "pitboss"
    assert User.objects.get(username="pitboss2").groups.get().name == "pitboss"
    # each password signs its user in
    for name, (_, _, password) in users.items():
        assert User.objects.get(username=name).check_password(password), name
    assert len({line for line in lines if line.startswith("|")}) == len(box) - 3

    again = StringIO()
    call_command("demo", stdout=again)
    assert "+--" not in again.getvalue()
    assert "no password is shown again" in again.getvalue()
