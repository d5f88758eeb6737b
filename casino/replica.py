"""Where reports, statistics and re-audits read from.

`reports_alias()` names the database connection that read-heavy work uses:
the "reports" connection (REPORTS_DATABASE_URL, a streaming replica) when it
is configured, else "default". Writes always go to "default".
"""

from __future__ import annotations

from django.conf import settings

REPORTS = "reports"


def reports_alias() -> str:
    return REPORTS if REPORTS in settings.DATABASES else "default"
