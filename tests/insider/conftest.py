"""The insider's tests reuse the pit boss's fixtures (four coups played
through the real services, a second pit boss, an admin, a signed-in
browser)."""

from tests.audit.conftest import (  # noqa: F401 (fixtures)
    admin,
    deal,
    pitboss2,
    played,
)
from tests.audit.test_pages import browser_as  # noqa: F401 (fixture)
