"""One settings module, driven by the environment.

Every variable is read here and validated at start: a bad value stops the process
with a message that names the variable, instead of failing later at the table.
Defaults give the embedded set-up (SQLite under var/, Celery eager, DEBUG on).
"""

import os
import re
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from casino.dbsession import with_limits as _with_limits

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

env = environ.Env()


def _read(name, reader, **kwargs):
    """Read one variable; any parse error names the variable."""
    try:
        return reader(name, **kwargs)
    except ImproperlyConfigured:
        raise
    except Exception as exc:  # environ raises ValueError & co. without the name
        raise ImproperlyConfigured(f"Environment variable {name}: {exc}") from exc


_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f", ""}


def _strict_bool(name, default):
    """A yes/no variable: one of the usual spellings, or it fails naming the
    variable (environ's bool reads anything it does not know as false, so a
    typo in DEBUG would silently mean production)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"Environment variable {name}: {raw!r} is not a yes/no value "
        "(use 1/0, true/false, yes/no or on/off)"
    )


DEBUG = _strict_bool("DEBUG", default=True)

SECRET_KEY = _read("SECRET_KEY", env.str, default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Environment variable SECRET_KEY is required when DEBUG is off."
        )
    # Only for a laptop or a demo: DEBUG is on, nothing here is worth protecting.
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

# The change log is an HMAC chain keyed with TRAIL_KEY (casino/trail.py): the
# key lives in the environment only, never in the database, so whoever holds
# the database alone cannot rebuild a valid chain after an edit.
TRAIL_KEY = _read("TRAIL_KEY", env.str, default="")
if not TRAIL_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Environment variable TRAIL_KEY is required when DEBUG is off "
            "(at least 32 characters, e.g. `openssl rand -hex 32`)."
        )
    TRAIL_KEY = "dev-only-trail-key-do-not-use-in-production"
elif len(TRAIL_KEY) < 32:
    raise ImproperlyConfigured(
        "Environment variable TRAIL_KEY: at least 32 characters "
        "(e.g. `openssl rand -hex 32`)"
    )
# Keys retired by a rotation, still needed to verify the rows they signed.
TRAIL_OLD_KEYS = _read("TRAIL_OLD_KEYS", env.list, default=[])
if TRAIL_KEY in TRAIL_OLD_KEYS:
    raise ImproperlyConfigured(
        "Environment variable TRAIL_OLD_KEYS: must not hold the current TRAIL_KEY"
    )

# Anchors and report stamps carry an Ed25519 signature (casino/signing.py): the
# private key from the environment only (a PEM or base64 of the raw 32-byte
# seed, or a file holding either), never in the database; its public half is
# served at /trail/keys.json. A dev key (derived from TRAIL_KEY) only with
# DEBUG on.
def _signing_settings():
    from casino.signing import (
        SigningKeyError,
        dev_seed,
        old_keys_from_text,
        public_of,
        seed_from_text,
        when_text,
    )

    text = _read("TRAIL_SIGNING_KEY", env.str, default="")
    path = _read("TRAIL_SIGNING_KEY_FILE", env.str, default="")
    if text and path:
        raise ImproperlyConfigured(
            "Environment variables TRAIL_SIGNING_KEY and TRAIL_SIGNING_KEY_FILE: "
            "set one, not both"
        )
    name = "TRAIL_SIGNING_KEY_FILE" if path else "TRAIL_SIGNING_KEY"
    if path:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ImproperlyConfigured(f"Environment variable {name}: {exc}") from exc
    try:
        if text:
            seed = seed_from_text(text)
        elif DEBUG:
            seed = dev_seed(TRAIL_KEY)
        else:
            raise ImproperlyConfigured(
                "Environment variable TRAIL_SIGNING_KEY (or TRAIL_SIGNING_KEY_FILE) "
                "is required when DEBUG is off: the Ed25519 key that signs anchors "
                "and report stamps (`manage.py trail_signing_key --new` makes one)."
            )
    except SigningKeyError as exc:
        raise ImproperlyConfigured(f"Environment variable {name}: {exc}") from exc
    try:
        since = when_text(_read("TRAIL_SIGNING_KEY_FROM", env.str, default=""))
    except SigningKeyError as exc:
        raise ImproperlyConfigured(
            f"Environment variable TRAIL_SIGNING_KEY_FROM: {exc}") from exc
    try:
        old = old_keys_from_text(_read("TRAIL_OLD_SIGNING_KEYS", env.str, default=""))
    except SigningKeyError as exc:
        raise ImproperlyConfigured(
            f"Environment variable TRAIL_OLD_SIGNING_KEYS: {exc}") from exc
    if any(k["public"] == public_of(seed) for k in old):
        raise ImproperlyConfigured(
            "Environment variable TRAIL_OLD_SIGNING_KEYS: must not hold the current "
            "TRAIL_SIGNING_KEY's public key"
        )
    return seed, since, old


TRAIL_SIGNING_KEY, TRAIL_SIGNING_KEY_FROM, TRAIL_OLD_SIGNING_KEYS = (
    _signing_settings()
)

ALLOWED_HOSTS = _read(
    "ALLOWED_HOSTS", env.list, default=["127.0.0.1", "localhost", "testserver"]
)
CSRF_TRUSTED_ORIGINS = _read("CSRF_TRUSTED_ORIGINS", env.list, default=[])

TIME_ZONE = _read("TIME_ZONE", env.str, default="Europe/Paris")
try:
    ZoneInfo(TIME_ZONE)
except (ZoneInfoNotFoundError, ValueError) as exc:
    raise ImproperlyConfigured(
        f"Environment variable TIME_ZONE: unknown time zone {TIME_ZONE!r}"
    ) from exc
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # Tablet API tokens, stored hashed, one per device, expiring (casino/tokenauth.py).
    "knox",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by us (/api/docs/)
    # Sign-in lockout after repeated failures (the AXES block below).
    "axes",
    "casino",
    "tables",
    "tables.tablet",
    "audit",
    "audit.reports",
    "django_celery_beat",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The Content-Security-Policy header (CONTENT_SECURITY_POLICY below).
    "casino.csp.ContentSecurityPolicyMiddleware",
    # A request id, user and table on every log line, one line per request
    # (casino/logs.py); the coup request's latency for /metrics.
    "casino.logs.RequestContextMiddleware",
    "casino.metrics.CoupTimingMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A NUL byte in a query or form value: 400 naming it, before any view
    # (PostgreSQL refuses it: a 500 otherwise). casino/nul.py.
    "casino.nul.NulByteMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who acts, for the trail rows of user and role changes (casino/accounts.py).
    "casino.accounts.ActorMiddleware",
    # The signed-in person's language wins over the browser's (tablet issue).
    "tables.tablet.language.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A page's write refused on the change log's held chain: 503 saying so
    # (casino/dbsession.py; the API answers through casino/api.py).
    "casino.dbsession.ChainHeldMiddleware",
    # Last, as axes asks: turns a locked-out sign-in into its 429 page.
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy on every response (casino/csp.py): scripts only from
# our own files, never inline, never eval, so that HTML which reaches a page
# from outside (a forged shared copy in Redis, a name that slipped past the
# escaping) cannot run. No page has an inline script or an event-handler
# attribute (tests/test_csp.py reads the templates). Styles may still be
# inline (style attributes and <style> blocks are in many templates, and
# htmx adds one): CSS runs no code. Nothing is loaded from another origin, no
# plugin, no <base>, forms post only here, no page is framed.
CONTENT_SECURITY_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}

ROOT_URLCONF = "casino.urls"
WSGI_APPLICATION = "casino.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # <html data-theme="day|night">: the user's theme (tablet Settings).
                "tables.tablet.theme.context",
            ],
        },
    },
]

DATABASES = {
    "default": _read(
        "DATABASE_URL", env.db_url, default=f"sqlite:///{VAR_DIR / 'casino.sqlite3'}"
    )
}
_ENGINES = {"django.db.backends.postgresql", "django.db.backends.sqlite3"}
if DATABASES["default"].get("ENGINE") not in _ENGINES:
    raise ImproperlyConfigured(
        "Environment variable DATABASE_URL: use postgres://user:pass@host:port/db "
        "or sqlite:///path (got an unsupported scheme)"
    )
# Persistent connections: a coup is a handful of queries, a new connection per
# request would cost more than the coup itself.
# The tables' owner, for `migrate` and `db_roles` only (casino/dbowner.py);
# web and workers run as the role of DATABASE_URL, which owns nothing.
def _db_url(name: str) -> dict | None:
    """An optional database URL; a bad one names the variable."""
    raw = _read(name, env.str, default="")
    if not raw:
        return None
    try:
        config = env.db_url_config(raw)
    except Exception as exc:
        raise ImproperlyConfigured(f"Environment variable {name}: {exc}") from exc
    if config.get("ENGINE") not in _ENGINES:
        raise ImproperlyConfigured(
            f"Environment variable {name}: use postgres://user:pass@host:port/db "
            "(got an unsupported scheme)"
        )
    return config


MIGRATE_DATABASE = _db_url("MIGRATE_DATABASE_URL")
if MIGRATE_DATABASE and MIGRATE_DATABASE.get("ENGINE") != DATABASES["default"].get(
    "ENGINE"
):
    raise ImproperlyConfigured(
        "Environment variable MIGRATE_DATABASE_URL: must name the same kind of "
        "database as DATABASE_URL (the owner of the same PostgreSQL database)"
    )
DATABASES["default"]["CONN_MAX_AGE"] = _read("CONN_MAX_AGE", env.int, default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Reports, statistics and re-audits may read from a PostgreSQL streaming
# replica of the same database (casino/replica.py): the "reports" connection,
# used only inside replica.reading() blocks; writes and migrations stay on
# "default". Under test it mirrors "default" (the same data, no test database
# made on a read-only standby).
REPORTS_DATABASE = _db_url("REPORTS_DATABASE_URL")
if REPORTS_DATABASE:
    if (REPORTS_DATABASE["ENGINE"] != "django.db.backends.postgresql"
            or DATABASES["default"]["ENGINE"] != REPORTS_DATABASE["ENGINE"]):
        raise ImproperlyConfigured(
            "Environment variable REPORTS_DATABASE_URL: must name a PostgreSQL "
            "streaming replica of DATABASE_URL's PostgreSQL database"
        )
    # A replica that does not answer is given up within seconds (the report
    # then reads the primary: casino/replica.py).
    REPORTS_DATABASE.setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
    DATABASES["reports"] = {
        **REPORTS_DATABASE,
        "CONN_MAX_AGE": DATABASES["default"]["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": True,
        "ATOMIC_REQUESTS": False,
        "TEST": {"MIRROR": "default"},
    }
DATABASE_ROUTERS = ["casino.replica.ReplicaRouter"]


# The app's own limits on every PostgreSQL session it opens, sent at connect
# (casino/dbsession.py): they win over the role's own settings, so the runtime
# role's credentials cannot lift them (`ALTER ROLE casino_app SET
# statement_timeout = 0`), nor stall the app on a lock they hold (the change
# log's chain: 503 "the change log is held" once DB_LOCK_TIMEOUT is past).
# Requests get short limits; Celery workers, beat and manage.py commands (report
# builds, re-audits, surveillance, the nightly re-settlement, migrations) long
# ones. manage.py says which it is (CASINO_PROCESS); a worker switches at start.
def _limit(name: str, default: float, low: float, high: float) -> float:
    value = _read(name, env.float, default=default)
    if not low <= value <= high:
        raise ImproperlyConfigured(
            f"Environment variable {name}: seconds from {low:g} to {high:g}"
        )
    return value


DB_LIMITS = {
    "web": (_limit("DB_STATEMENT_TIMEOUT", 30, 1, 3600),
            _limit("DB_LOCK_TIMEOUT", 5, 0.1, 300)),
    "worker": (_limit("DB_WORKER_STATEMENT_TIMEOUT", 3600, 1, 7 * 86400),
               _limit("DB_WORKER_LOCK_TIMEOUT", 60, 0.1, 3600)),
}
DB_PROCESS = _read("CASINO_PROCESS", env.str, default="web")
if DB_PROCESS not in DB_LIMITS:
    raise ImproperlyConfigured(
        "Environment variable CASINO_PROCESS: web or worker (manage.py sets "
        "worker; casino/dbsession.py)"
    )
for _config in DATABASES.values():
    if _config.get("ENGINE") == "django.db.backends.postgresql":
        _options = _config.setdefault("OPTIONS", {})
        _options["options"] = _with_limits(
            _options.get("options", ""), statement=DB_LIMITS[DB_PROCESS][0],
            lock=DB_LIMITS[DB_PROCESS][1],
        )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Anchors of the chain's head, outside the database (casino/anchors.py): a
# directory the app only ever adds files to; mount it from storage the
# database's people cannot rewrite.
TRAIL_ANCHOR_DIR = Path(
    _read("TRAIL_ANCHOR_DIR", env.str, default=str(VAR_DIR / "anchors"))
)


def _minutes(name: str, default: int) -> int | float:
    """Minutes from 1 to 1440; a fraction down to 0.05 (3 s) for a test that
    runs beat for real (tests/insider/test_beat_trail.py)."""
    value = float(_read(name, env.float, default=default))
    if not 0.05 <= value <= 1440:
        raise ImproperlyConfigured(
            f"Environment variable {name}: minutes from 1 to 1440 (down to "
            "0.05 for a test)"
        )
    return int(value) if value.is_integer() else value


TRAIL_ANCHOR_MINUTES = _minutes("TRAIL_ANCHOR_MINUTES", 15)

# The trail as a Merkle log and its witnesses (casino/merkle.py,
# casino/witness.py, docs/witness.md). TRAIL_LOG_ORIGIN names the log in its
# checkpoints (and is its key's name); WITNESS_URLS lists the witnesses a
# checkpoint goes to, comma-separated "URL;VKEY" (VKEY the witness's
# cosignature/v1 verifier key, name+keyid+base64); WITNESS_QUORUM how many
# must have cosigned the latest checkpoint for /health/details/ to be happy.
TRAIL_LOG_ORIGIN = _read("TRAIL_LOG_ORIGIN", env.str,
                         default="chemmy-audit.invalid/trail").strip()
# How often beat looks for new rows to checkpoint (seconds; idle: nothing).
TRAIL_CHECKPOINT_SECONDS = _read("TRAIL_CHECKPOINT_SECONDS", env.float, default=0.5)
if not 0.2 <= TRAIL_CHECKPOINT_SECONDS <= 3600:
    raise ImproperlyConfigured(
        "Environment variable TRAIL_CHECKPOINT_SECONDS: from 0.2 to 3600")


def _witnesses() -> list[dict]:
    from tools.evidence_verifier import tlog

    if not TRAIL_LOG_ORIGIN or any(c.isspace() or c == "+" for c in TRAIL_LOG_ORIGIN):
        raise ImproperlyConfigured(
            "Environment variable TRAIL_LOG_ORIGIN: non-empty, no space, no plus")
    out = []
    for entry in _read("WITNESS_URLS", env.list, default=[]):
        url, _, vkey = entry.strip().partition(";")
        if not re.match(r"https?://[^\s;]+$", url):
            raise ImproperlyConfigured(
                f"Environment variable WITNESS_URLS: {url!r} is not an http(s) URL")
        try:
            key = tlog.parse_vkey(vkey)
        except tlog.ProofError as exc:
            raise ImproperlyConfigured(
                f"Environment variable WITNESS_URLS: {url}: {exc}") from exc
        if key.alg != tlog.ALG_COSIGNATURE_V1:
            raise ImproperlyConfigured(
                f"Environment variable WITNESS_URLS: {url}: a cosignature/v1 key "
                "(type 0x04) expected")
        out.append({"url": url.rstrip("/"), "name": key.name, "vkey": vkey.strip()})
    if len({w["name"] for w in out}) != len(out):
        raise ImproperlyConfigured("Environment variable WITNESS_URLS: a name twice")
    return out


WITNESSES = _witnesses()
WITNESS_QUORUM = _read("WITNESS_QUORUM", env.int, default=len(WITNESSES))
if not 0 <= WITNESS_QUORUM <= len(WITNESSES):
    raise ImproperlyConfigured(
        "Environment variable WITNESS_QUORUM: from 0 to the number of WITNESS_URLS")
WITNESS_TIMEOUT = _read("WITNESS_TIMEOUT", env.float, default=3.0)
if not 0.1 <= WITNESS_TIMEOUT <= 60:
    raise ImproperlyConfigured(
        "Environment variable WITNESS_TIMEOUT: between 0.1 and 60 seconds")
# How often beat brings lagging witnesses up and asks them whether they
# hold more than the database (a restored dump, a cut tail, no write since).
WITNESS_CHECK_SECONDS = _read("WITNESS_CHECK_SECONDS", env.float, default=5.0)
# RFC 3161 trusted timestamps of every anchor (casino/timestamps.py): the
# authority's URL, and the certificate(s) its tokens are checked against (its
# root CA, PEM, intermediates after it). Unset URL: no timestamps.
TRAIL_TSA_URL = _read("TRAIL_TSA_URL", env.str, default="").strip()
TRAIL_TSA_CA_FILE = _read("TRAIL_TSA_CA_FILE", env.str, default="").strip()
if TRAIL_TSA_URL and not re.match(r"https?://", TRAIL_TSA_URL):
    raise ImproperlyConfigured(
        "Environment variable TRAIL_TSA_URL: an http:// or https:// URL"
    )
if TRAIL_TSA_URL and not TRAIL_TSA_CA_FILE:
    raise ImproperlyConfigured(
        "Environment variable TRAIL_TSA_CA_FILE is required with TRAIL_TSA_URL: "
        "the authority's CA certificate (PEM), to check its tokens"
    )
if TRAIL_TSA_CA_FILE and not Path(TRAIL_TSA_CA_FILE).is_file():
    raise ImproperlyConfigured(
        f"Environment variable TRAIL_TSA_CA_FILE: no such file {TRAIL_TSA_CA_FILE}"
    )
# How long an anchor waits for the authority before it is kept without its
# token (asked again by beat every TRAIL_TSA_RETRY_MINUTES).
TRAIL_TSA_TIMEOUT = _read("TRAIL_TSA_TIMEOUT", env.float, default=10.0)
if not 0.1 <= TRAIL_TSA_TIMEOUT <= 120:
    raise ImproperlyConfigured(
        "Environment variable TRAIL_TSA_TIMEOUT: between 0.1 and 120 seconds"
    )
TRAIL_TSA_RETRY_MINUTES = _minutes("TRAIL_TSA_RETRY_MINUTES", 10)

# The gaming-day close (audit/reports/nightly.py, beat hourly at :15): a day
# that ended at the cut-off hour H is closed (reports, ledger re-settlement)
# from H:00 plus this margin, so that coups still queued on a tablet land first.
NIGHTLY_MARGIN_MINUTES = _read("NIGHTLY_MARGIN_MINUTES", env.int, default=10)
if not 0 <= NIGHTLY_MARGIN_MINUTES <= 180:
    raise ImproperlyConfigured(
        "Environment variable NIGHTLY_MARGIN_MINUTES: between 0 and 180"
    )

# Statistical surveillance (audit/surveillance): the false discovery rate its
# runs control over all the tests of a run (Benjamini-Hochberg), a house
# setting; a manager may run one period at another rate.
SURVEILLANCE_FDR = _read("SURVEILLANCE_FDR", env.float, default=0.05)
if not 0 < SURVEILLANCE_FDR < 0.5:
    raise ImproperlyConfigured(
        "Environment variable SURVEILLANCE_FDR: a rate above 0 and below 0.5"
    )

# Live surveillance during the gaming day (audit/surveillance/live.py): the
# share of shifts (gaming days) with any false live alert stays below
# SURVEILLANCE_LIVE_ALPHA (always-valid tests: however often it looks); beat
# looks every SURVEILLANCE_LIVE_SECONDS, and each shoe's close asks for a look.
SURVEILLANCE_LIVE_ALPHA = _read("SURVEILLANCE_LIVE_ALPHA", env.float, default=0.03)
if not 0 < SURVEILLANCE_LIVE_ALPHA < 0.5:
    raise ImproperlyConfigured(
        "Environment variable SURVEILLANCE_LIVE_ALPHA: a rate above 0 and below 0.5"
    )
SURVEILLANCE_LIVE_SECONDS = _read("SURVEILLANCE_LIVE_SECONDS", env.int, default=30)
if not 1 <= SURVEILLANCE_LIVE_SECONDS <= 3600:
    raise ImproperlyConfigured(
        "Environment variable SURVEILLANCE_LIVE_SECONDS: seconds from 1 to 3600"
    )
# A live test is started every gaming day and runs this many days (its window:
# a subtle cheat needs more coups than one day holds; livetests.WINDOW_DAYS).
SURVEILLANCE_LIVE_WINDOW_DAYS = _read("SURVEILLANCE_LIVE_WINDOW_DAYS", env.int,
                                      default=7)
if not 1 <= SURVEILLANCE_LIVE_WINDOW_DAYS <= 28:
    raise ImproperlyConfigured(
        "Environment variable SURVEILLANCE_LIVE_WINDOW_DAYS: gaming days from 1 to 28"
    )

# The review queue, the floor and their API bring the flags up to date before
# they read (audit.services.flags_sync: a safety net, since a coup raises its
# flags and a correction syncs them in their own transactions); each web
# process does it at most every FLAGS_PAGE_SYNC_SECONDS (0: at every read).
# With 500 tables the scan of every live flag at every read was the floor's
# largest query (bench/bench_floor.py).
FLAGS_PAGE_SYNC_SECONDS = _read("FLAGS_PAGE_SYNC_SECONDS", env.int, default=5)
if not 0 <= FLAGS_PAGE_SYNC_SECONDS <= 300:
    raise ImproperlyConfigured(
        "Environment variable FLAGS_PAGE_SYNC_SECONDS: seconds from 0 to 300"
    )

# The floor's cards and the review queue are rendered once and shared by
# every pit boss, manager and auditor who loads them within this many seconds
# (audit/pages/shared.py; 0: each request renders its own). A table opened or
# closed and a flag raised or decided show at once whatever it is; a coup, at
# most this late.
FLOOR_SHARE_SECONDS = _read("FLOOR_SHARE_SECONDS", env.int, default=2)
if not 0 <= FLOOR_SHARE_SECONDS <= 60:
    raise ImproperlyConfigured(
        "Environment variable FLOOR_SHARE_SECONDS: seconds from 0 to 60"
    )

# Operations (casino/health.py, casino/metrics.py, casino/logs.py).
# A Celery worker writes a heartbeat to Redis this often; the health check
# calls the workers gone after three missed beats.
WORKER_HEARTBEAT_SECONDS = _read("WORKER_HEARTBEAT_SECONDS", env.int, default=10)
if not 1 <= WORKER_HEARTBEAT_SECONDS <= 300:
    raise ImproperlyConfigured(
        "Environment variable WORKER_HEARTBEAT_SECONDS: seconds from 1 to 300"
    )
# The nightly ledger check (the gaming-day close) runs once a day per cut-off:
# older than this, the health check fails.
LEDGER_CHECK_MAX_HOURS = _read("LEDGER_CHECK_MAX_HOURS", env.int, default=26)
if not 1 <= LEDGER_CHECK_MAX_HOURS <= 24 * 14:
    raise ImproperlyConfigured(
        "Environment variable LEDGER_CHECK_MAX_HOURS: hours from 1 to 336"
    )
# /metrics answers a request bearing this token (Authorization: Bearer ...),
# or a signed-in staff user; empty: staff only.
METRICS_TOKEN = _read("METRICS_TOKEN", env.str, default="")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured(
        "Environment variable METRICS_TOKEN: at least 16 characters "
        "(e.g. `openssl rand -hex 16`)"
    )

REDIS_URL = _read("REDIS_URL", env.str, default="")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        f"Environment variable REDIS_URL: expected redis://host:port/db, "
        f"got {REDIS_URL!r}"
    )

# The test suite runs in parallel (pytest-xdist, `make test`): each worker
# process has its own test database, and here its own Redis database next to
# REDIS_URL's (gw0 the one after it, gw1 the next...), so that one worker's
# cache entries, locks and Celery queue are never another's.
_TEST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if REDIS_URL and _TEST_WORKER.startswith("gw"):
    from urllib.parse import urlsplit, urlunsplit

    _parts = urlsplit(REDIS_URL)
    _db = int(_parts.path.strip("/") or 0) + 1 + int(_TEST_WORKER[2:])
    REDIS_URL = urlunsplit(_parts._replace(path=f"/{_db}"))

# Celery: with Redis, a real broker; without it, tasks run in-process (embedded).
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = _strict_bool(
    "CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL
)
CELERY_TASK_EAGER_PROPAGATES = True
# JSON only, both ways: a message or a result that Redis hands over is data,
# never a pickle (which would run code in the worker or in whoever reads a
# result). Celery's defaults, said here so that no one turns pickle on.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
CELERY_EVENT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker killed outright (OOM, host lost) leaves its running task unacked in
# Redis; another worker puts it back on the queue once it is this many seconds
# old (checked at worker start, then every ~100 s). Must exceed the longest
# report build or re-audit chunk, or a task still running is delivered twice
# (harmless: a report job is fenced by its attempt, a chunk is done once).
_visibility = _read("CELERY_VISIBILITY_TIMEOUT", env.int, default=3600)
if _visibility < 1:
    raise ImproperlyConfigured(
        "Environment variable CELERY_VISIBILITY_TIMEOUT: must be 1 second or more"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _visibility}
CELERY_TIMEZONE = TIME_ZONE
# Two queues. "clock": the short tasks that keep time -- the trail's
# checkpoints (a second after a write) and witnesses, its anchors and their
# time-stamps, the live surveillance's look, the gaming day's close and the
# sweep of jobs not sent; "celery": the long ones (report builds, re-audits,
# surveillance runs, the ledger's verification). A worker started without -Q
# takes both (the suite, the benches, a one-machine install); production runs
# one worker per queue (deploy/systemd: casino-worker, casino-clock), so that
# four month-end reports never hold a checkpoint back.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CLOCK_QUEUE = "clock"
CLOCK_TASKS = ("trail.checkpoint", "trail.witnesses", "trail.anchor",
               "trail.timestamps_retry", "audit.surveillance_live",
               "reports.gaming_day_close", "reports.dispatch_pending")
CELERY_TASK_QUEUES = (Queue(CELERY_TASK_DEFAULT_QUEUE), Queue(CLOCK_QUEUE))
CELERY_TASK_ROUTES = {name: {"queue": CLOCK_QUEUE} for name in CLOCK_TASKS}
# Schedules live in the database (editable in the admin): `celery -A casino beat`,
# django-celery-beat's scheduler with sub-second intervals kept (casino/beat.py).
CELERY_BEAT_SCHEDULER = "casino.beat:Scheduler"
# Beat copies these into the database at start (and keeps them in step).
CELERY_BEAT_SCHEDULE = {
    "trail-anchor": {
        "task": "trail.anchor",
        "schedule": timedelta(minutes=TRAIL_ANCHOR_MINUTES),
        "kwargs": {"reason": "interval"},
    },
    # anchors the timestamp authority did not answer for, asked again
    # (casino/timestamps.py; nothing to do without TRAIL_TSA_URL)
    # the trail's checkpoints, a second after a write at most (idle: none),
    # and its witnesses asked again (casino/checkpoints.py)
    "trail-checkpoint": {
        "task": "trail.checkpoint",
        "schedule": timedelta(seconds=TRAIL_CHECKPOINT_SECONDS),
    },
    "trail-witnesses": {
        "task": "trail.witnesses",
        "schedule": timedelta(seconds=WITNESS_CHECK_SECONDS),
    },
    "trail-timestamps": {
        "task": "trail.timestamps_retry",
        "schedule": timedelta(minutes=TRAIL_TSA_RETRY_MINUTES),
    },
    # the live surveillance's look at the open gaming day (also asked for
    # at each shoe's close): audit/surveillance/live.py
    "surveillance-live": {
        "task": "audit.surveillance_live",
        "schedule": timedelta(seconds=SURVEILLANCE_LIVE_SECONDS),
    },
}

# A Redis that hangs must fail fast, as one that is down does: the roles and
# rate limits then fall back / let requests through (tests/test_cache_down.py).
REDIS_CACHE_OPTIONS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
if REDIS_URL:
    CACHES = {
        "default": {
            # JSON, signed with its key and expiry: no pickle, no trust
            # (casino/cache.py)
            "BACKEND": "casino.cache.SignedRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Axes first: it refuses a locked-out user name before any password is checked.
AUTHENTICATION_BACKENDS = [
    # then every sign-in from an address with too many failures, whatever the
    # names (casino/backends.py: counted in the database, not in Redis)
    "casino.backends.AddressLimit",
    "axes.backends.AxesStandaloneBackend",
    "casino.backends.SealedModelBackend",
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
# A croupier signs in once for a shift; the tablet's lock screen (PIN) covers
# the breaks in between.
SESSION_COOKIE_AGE = _read("SESSION_COOKIE_AGE", env.int, default=12 * 3600)
# Browser sessions stored under a digest of their key, their data bound to it,
# lasting SESSION_COOKIE_AGE from sign-in (casino/sessions.py): whoever reads
# django_session finds no cookie he can send back.
SESSION_ENGINE = "casino.sessions"
# A tablet's API token lasts one shift from sign-in, then the croupier signs in
# again (casino/tokenauth.py). Seconds.
_token_ttl = _read("API_TOKEN_TTL", env.int, default=12 * 3600)
if _token_ttl < 60:
    raise ImproperlyConfigured(
        "Environment variable API_TOKEN_TTL: seconds a token lasts, 60 or more"
    )
API_TOKEN_TTL = timedelta(seconds=_token_ttl)
# django-rest-knox: the project's token model (with the device and the password
# mark); knox's defaults otherwise (SHA-512 digests, no refresh on use).
KNOX_TOKEN_MODEL = "casino.ApiToken"
REST_KNOX = {"TOKEN_MODEL": KNOX_TOKEN_MODEL, "TOKEN_TTL": API_TOKEN_TTL}
# knox's migrations would create its own token table, which nothing uses (the
# model is swapped for casino.ApiToken) and whose key to auth_user blocks a
# flush of the users; without them no such table is made.
MIGRATION_MODULES = {"knox": None}

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = DEBUG
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").exists() else []
MEDIA_ROOT = _read("MEDIA_ROOT", env.path, default=str(VAR_DIR / "media"))

# API rate limits (casino/throttles.py). Each rate is "N/s|min|hour|day" or
# "off"; API_THROTTLING=0 turns them all off (bench/ only, never the floor).
API_THROTTLING = _strict_bool("API_THROTTLING", default=True)
_RATE = r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)"


def _rate(name: str, default: str) -> str | None:
    value = _read(name, env.str, default=default).strip().lower()
    if value != "off" and not re.fullmatch(_RATE, value):
        raise ImproperlyConfigured(
            f"Environment variable {name}: expected a rate such as 120/min "
            f"(per s, min, hour or day) or off, got {value!r}"
        )
    return None if value == "off" or not API_THROTTLING else value


REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "casino.tokenauth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "casino.api.CasinoAutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "casino.drf.Pagination",  # limit <= 1000
    # The API speaks JSON only (the tablets send JSON; no page posts a form
    # to it): a size limit and a nesting guard, see casino/drf.py. Form
    # bodies get a 415 instead of HTML-form semantics (an empty field taking
    # its default) and a browser form cannot post to the API cross-site.
    "DEFAULT_PARSER_CLASSES": ["casino.drf.JSONParser"],
    # Decimals leave as strings, in every body (casino/drf.py).
    "DEFAULT_RENDERER_CLASSES": [
        "casino.drf.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "casino.api.exception_handler",
    "COERCE_DECIMAL_TO_STRING": True,
    # Per user (per client IP when anonymous); casino/throttles.py says why
    # each scope, and lets requests through if the cache (Redis) is down.
    "DEFAULT_THROTTLE_CLASSES": [
        "casino.throttles.AnonRateThrottle",
        "casino.throttles.UserRateThrottle",
        "casino.throttles.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "login": _rate("LOGIN_THROTTLE", "30/min"),
        "anon": _rate("ANON_THROTTLE", "60/min"),
        "api": _rate("API_THROTTLE", "600/min"),
        "coup": _rate("COUP_THROTTLE", "120/min"),
        "reports": _rate("REPORTS_THROTTLE", "60/hour"),
    },
    # The client address for throttles and the sign-in lockout: REMOTE_ADDR,
    # or the N-th address from the right of X-Forwarded-For behind N proxies
    # that set it. Never the whole header: a client could forge it and be
    # someone new at every request.
    "NUM_PROXIES": _read("NUM_PROXIES", env.int, default=0),
}
if REST_FRAMEWORK["NUM_PROXIES"] < 0:
    raise ImproperlyConfigured("Environment variable NUM_PROXIES: must be 0 or more")

# Sign-in lockout (django-axes), for the sign-in page, the admin's and the API
# token endpoint. Failures are counted per (user name, client address) pair:
# someone guessing a croupier's password from one tablet locks that name out
# on that tablet only: the croupier signs in on another tablet, and everyone
# else keeps signing in on this one (a lockout per address alone would lock a
# shared tablet's whole team out; per name alone would let anyone lock any
# croupier out from anywhere). Guessing across many names from one address is
# held back by LOGIN_THROTTLE. Counted in the database (works with Redis
# down). Unlock early: `manage.py axes_reset_username NAME`, or the admin's
# "Access attempts" page.
AXES_ENABLED = _strict_bool("AXES_ENABLED", default=True)
# django-axes's own INFO lines (its start-up banner, every sign-in): off
# unless asked for; lockouts are logged whatever this says.
AXES_VERBOSE = _strict_bool("AXES_VERBOSE", default=False)
AXES_FAILURE_LIMIT = _read("AXES_FAILURE_LIMIT", env.int, default=5)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(
        "Environment variable AXES_FAILURE_LIMIT: must be 1 or more"
    )
_cooloff = _read("AXES_COOLOFF_MINUTES", env.int, default=15)
if _cooloff < 0:
    raise ImproperlyConfigured(
        "Environment variable AXES_COOLOFF_MINUTES: must be 0 (until reset) or more"
    )
# 0: locked until someone resets it.
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff) if _cooloff else None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Failed sign-ins from one address, whatever the names, within the cool-off
# (the same window): beyond this, no one signs in from there until it ends
# (casino.backends.AddressLimit). Counted in the database, so that deleting
# the sign-in throttle's keys in Redis (or Redis down) lets no more guesses
# through. Above AXES_FAILURE_LIMIT: a shared tablet's team has typos too.
LOGIN_ADDRESS_FAILURE_LIMIT = _read(
    "LOGIN_ADDRESS_FAILURE_LIMIT", env.int, default=30)
if LOGIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        "Environment variable LOGIN_ADDRESS_FAILURE_LIMIT: at least "
        f"AXES_FAILURE_LIMIT ({AXES_FAILURE_LIMIT})"
    )
AXES_CLIENT_IP_CALLABLE = "casino.throttles.client_ip"
AXES_RESET_ON_SUCCESS = True  # a croupier's typo is forgotten once he is in
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "casino.signin.lockout_page"  # a page that says why
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"

# Exposes /api/v1/bench/bare/ (one INSERT, nothing else) for bench/ only.
BENCH_BARE_ENDPOINT = _strict_bool("BENCH_BARE_ENDPOINT", default=False)

SPECTACULAR_SETTINGS = {
    "TITLE": "Chemmy table audit API",
    "DESCRIPTION": "Live coup entry, tableau audit, commission and bank carry-forward.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/docs/ from our static files, its script a file too (the CSP)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # `<id:pk>` (casino.api.IdConverter): ids the database can hold.
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "integer", "minimum": 1, "maximum": 999_999_999_999_999_999}
    },
    # Named enums where two models share a field name ("kind", "status").
    "ENUM_NAME_OVERRIDES": {
        "FlagKindEnum": "audit.models.Flag.Kind",
        "FlagStatusEnum": "audit.models.Flag.Status",
        "ReportKindEnum": "audit.reports.models.ReportJob.Kind",
        "ReportStatusEnum": "audit.reports.models.Status",
    },
}

# Uploads and bodies: a coup is a few hundred bytes; refuse absurd bodies early.
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

# A load balancer's probe and Prometheus talk to each node directly, in plain
# HTTP on the internal network: a redirect to https would read as "down".
SECURE_REDIRECT_EXEMPT = [r"^health/$", r"^metrics$"]

if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = _strict_bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = _read("SECURE_HSTS_SECONDS", env.int, default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# Logs (casino/logs.py): plain text by default (`make run`), one JSON object
# per line for a collector with LOG_FORMAT=json (production). Either way every
# line carries the request's id, user and table, and is scrubbed of secrets.
LOG_FORMAT = _read("LOG_FORMAT", env.str, default="text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured("Environment variable LOG_FORMAT: text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "casino.logs.ContextFilter"}},
    "formatters": {
        "text": {
            "()": "casino.logs.RedactingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s",
        },
        "json": {"()": "casino.logs.RedactingJsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            "formatter": LOG_FORMAT,
        }
    },
    "root": {
        "handlers": ["console"],
        "level": _read("LOG_LEVEL", env.str, default="INFO"),
    },
    # the PDF's font subsetting says a line per table of the font at INFO
    "loggers": {"fontTools": {"level": "WARNING"}},
}
# With JSON, a Celery worker keeps these handlers (and so the JSON lines)
# instead of putting its own on the root logger.
CELERY_WORKER_HIJACK_ROOT_LOGGER = LOG_FORMAT != "json"
