"""Roles come from a cache; a change of groups takes effect at once."""

from django.contrib.auth.models import Group, User

from casino.roles import has_capability


def fresh(user):
    return User.objects.get(pk=user.pk)  # a new request loads a new user object


def test_removed_role_is_refused_at_once(croupier):
    assert has_capability(fresh(croupier), "coup.record")
    croupier.groups.remove(Group.objects.get(name="croupier"))
    assert not has_capability(fresh(croupier), "coup.record")


def test_role_added_from_the_group_side(outsider):
    assert not has_capability(fresh(outsider), "table.read")
    Group.objects.get(name="auditor").user_set.add(outsider)
    assert has_capability(fresh(outsider), "table.read")
    Group.objects.get(name="auditor").user_set.clear()
    assert not has_capability(fresh(outsider), "table.read")


def test_roles_survive_a_cache_outage(croupier, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(cache, "get", down)
    monkeypatch.setattr(cache, "set", down)
    monkeypatch.setattr(cache, "delete_many", down)
    assert has_capability(fresh(croupier), "coup.record")
    croupier.groups.remove(Group.objects.get(name="croupier"))
    assert not has_capability(fresh(croupier), "coup.record")
