"""Settings come from the environment and fail loudly, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from casino.dbsession import session_options

ROOT = Path(__file__).resolve().parent.parent


def start(**env) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "TRAIL_KEY",
                     "REPORTS_DATABASE_URL", "MIGRATE_DATABASE_URL",
                     "TRAIL_SIGNING_KEY", "TRAIL_SIGNING_KEY_FILE",
                     "TRAIL_OLD_SIGNING_KEYS", "TRAIL_SIGNING_KEY_FROM",
                     "TRAIL_TSA_URL", "TRAIL_TSA_CA_FILE"}
    }
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "env, variable",
    [
        # the variable and the value, not "SECRET_KEY is required when DEBUG
        # is off": a typo must not be read as production
        ({"DEBUG": "maybe"}, "DEBUG: 'maybe'"),
        ({"AXES_ENABLED": "perhaps"}, "AXES_ENABLED: 'perhaps'"),
        ({"DEBUG": "0"}, "SECRET_KEY"),
        ({"TIME_ZONE": "Mars/Olympus"}, "TIME_ZONE"),
        ({"DATABASE_URL": "nosuchdb://x"}, "DATABASE_URL"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"CONN_MAX_AGE": "forever"}, "CONN_MAX_AGE"),
        ({"CELERY_VISIBILITY_TIMEOUT": "0"}, "CELERY_VISIBILITY_TIMEOUT"),
        ({"CELERY_VISIBILITY_TIMEOUT": "an hour"}, "CELERY_VISIBILITY_TIMEOUT"),
        ({"API_TOKEN_TTL": "a shift"}, "API_TOKEN_TTL"),
        ({"API_TOKEN_TTL": "0"}, "API_TOKEN_TTL"),
        ({"DEBUG": "0", "SECRET_KEY": "s" * 60}, "TRAIL_KEY"),
        ({"TRAIL_KEY": "too-short"}, "TRAIL_KEY"),
        ({"TRAIL_KEY": "k" * 40, "TRAIL_OLD_KEYS": "k" * 40}, "TRAIL_OLD_KEYS"),
        # the Ed25519 key of anchors and stamps: required in production, read
        # as a PEM or the base64 of its 32-byte seed, never half-understood
        ({"DEBUG": "0", "SECRET_KEY": "s" * 60, "TRAIL_KEY": "t" * 64},
         "TRAIL_SIGNING_KEY"),
        ({"TRAIL_SIGNING_KEY": "not a key"}, "TRAIL_SIGNING_KEY"),
        ({"TRAIL_SIGNING_KEY": "AAAA"}, "TRAIL_SIGNING_KEY"),
        ({"TRAIL_SIGNING_KEY_FILE": "/nonexistent/key.pem"},
         "TRAIL_SIGNING_KEY_FILE"),
        ({"TRAIL_OLD_SIGNING_KEYS": "AAAA;2024-01-01;2025-01-01"},
         "TRAIL_OLD_SIGNING_KEYS"),
        ({"TRAIL_OLD_SIGNING_KEYS": "A" * 43 + "=;last year;"},
         "TRAIL_OLD_SIGNING_KEYS"),
        ({"TRAIL_SIGNING_KEY_FROM": "yesterday"}, "TRAIL_SIGNING_KEY_FROM"),
        # a time-stamp authority needs the certificate its tokens are checked by
        ({"TRAIL_TSA_URL": "http://tsa.example/"}, "TRAIL_TSA_CA_FILE"),
        ({"TRAIL_TSA_URL": "tsa.example"}, "TRAIL_TSA_URL"),
        ({"TRAIL_ANCHOR_MINUTES": "0"}, "TRAIL_ANCHOR_MINUTES"),
        ({"TRAIL_ANCHOR_MINUTES": "often"}, "TRAIL_ANCHOR_MINUTES"),
        ({"DB_STATEMENT_TIMEOUT": "0"}, "DB_STATEMENT_TIMEOUT"),
        ({"DB_STATEMENT_TIMEOUT": "half a minute"}, "DB_STATEMENT_TIMEOUT"),
        ({"DB_LOCK_TIMEOUT": "0"}, "DB_LOCK_TIMEOUT"),
        ({"DB_WORKER_STATEMENT_TIMEOUT": "-1"}, "DB_WORKER_STATEMENT_TIMEOUT"),
        ({"DB_WORKER_LOCK_TIMEOUT": "forever"}, "DB_WORKER_LOCK_TIMEOUT"),
        ({"CASINO_PROCESS": "gunicorn"}, "CASINO_PROCESS"),
        ({"MIGRATE_DATABASE_URL": "postgres://owner@db/casino"},
         "MIGRATE_DATABASE_URL"),
        ({"MIGRATE_DATABASE_URL": "mysql://owner@db/casino"},
         "MIGRATE_DATABASE_URL"),
        # a streaming replica of PostgreSQL: never of SQLite, never another kind
        ({"REPORTS_DATABASE_URL": "postgres://reader@replica/casino"},
         "REPORTS_DATABASE_URL"),
        ({"DATABASE_URL": "postgres://app@db/casino",
          "REPORTS_DATABASE_URL": "sqlite:///var/reports.sqlite3"},
         "REPORTS_DATABASE_URL"),
        ({"DATABASE_URL": "postgres://app@db/casino",
          "REPORTS_DATABASE_URL": "replica.example:5432"}, "REPORTS_DATABASE_URL"),
    ],
)
def test_bad_value_fails_at_start_naming_the_variable(env, variable):
    result = start(**env)
    assert result.returncode != 0
    assert variable in result.stderr


def test_defaults_start_embedded():
    result = start()
    assert result.returncode == 0, result.stderr


def test_production_settings_pass_check_deploy():
    clean = {
        k: v
        for k, v in os.environ.items()
        # the browser tests' async flag is a test-only setting, not production's
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    clean.update(
        DEBUG="0",
        SECRET_KEY="x" * 60 + "-production-secret-for-the-test",
        TRAIL_KEY="t" * 64,
        TRAIL_SIGNING_KEY="B" * 43 + "=",
        ALLOWED_HOSTS="casino.example",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_embedded_default_runs_celery_eagerly(settings):
    if settings.REDIS_URL:
        assert not settings.CELERY_TASK_ALWAYS_EAGER
    else:
        assert settings.CELERY_TASK_ALWAYS_EAGER


SHOW_DATABASES = (
    "from django.conf import settings; import json; "
    "print(json.dumps({a: [d['HOST'], d['PORT'], d['TEST'].get('MIRROR')] "
    "for a, d in settings.DATABASES.items() if a != 'default'})); "
    "print(settings.DATABASE_ROUTERS)"
)


def _databases(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "REPORTS_DATABASE_URL"}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SHOW_DATABASES], cwd=ROOT,
        env=clean, capture_output=True, text=True, timeout=60,
    )


def test_reports_database_adds_the_reports_alias_mirrored_under_test():
    result = _databases(DATABASE_URL="postgres://app@db:5432/casino",
                        REPORTS_DATABASE_URL="postgres://app@replica:5433/casino")
    assert result.returncode == 0, result.stderr
    aliases, routers = result.stdout.splitlines()[-2:]
    assert aliases == '{"reports": ["replica", 5433, "default"]}'
    assert routers == "['casino.replica.ReplicaRouter']"


def test_without_reports_database_there_is_one_connection():
    result = _databases()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2] == "{}"


SHOW_LIMITS = (
    "from django.conf import settings; "
    "print(settings.DB_PROCESS, settings.DATABASES['default']"
    ".get('OPTIONS', {}).get('options'))"
)


def _limits(*command: str, **env) -> str:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "REPORTS_DATABASE_URL", "CASINO_PROCESS"}}
    clean.update({"DATABASE_URL": "postgres://app@db:5432/casino", **env})
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env=clean,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


def test_each_process_sets_its_own_database_limits_at_connect():
    """casino/dbsession.py: web requests short, workers and commands long,
    sent as the connection's startup options (no role setting lifts them)."""
    web = _limits("-c", "import casino.wsgi\n" + SHOW_LIMITS.replace("; ", "\n"))
    pins = session_options()  # the settings every session runs under
    assert web == f"web {pins} -c statement_timeout=30000 -c lock_timeout=5000"
    command = _limits("manage.py", "shell", "-c", SHOW_LIMITS)
    assert command == (f"worker {pins} -c statement_timeout=3600000 "
                       "-c lock_timeout=60000")
    # a Celery worker (or beat) switches itself at start
    worker = _limits("-c", "import casino.wsgi\n"
                     "from celery.signals import celeryd_init\n"
                     "celeryd_init.send(sender='w', instance=None, conf=None, "
                     "options={})\n" + SHOW_LIMITS.replace("; ", "\n"))
    assert worker == (f"worker {pins} -c statement_timeout=3600000 "
                      "-c lock_timeout=60000")
    # set by the operator; limits in the URL's own options give way to them
    tuned = _limits(
        "manage.py", "shell", "-c", SHOW_LIMITS, DB_WORKER_STATEMENT_TIMEOUT="7200",
        DB_WORKER_LOCK_TIMEOUT="2.5",
        DATABASE_URL="postgres://app@db:5432/casino?options=-c%20statement_timeout%3D0"
        "%20-c%20search_path%3Dpublic")
    assert tuned == (f"worker {pins} -c search_path=public "
                     "-c statement_timeout=7200000 -c lock_timeout=2500")
    sqlite = _limits("manage.py", "shell", "-c", SHOW_LIMITS,
                     DATABASE_URL="sqlite:///var/limits.sqlite3")
    assert sqlite == "worker None"


def test_celery_takes_json_only():
    """A message or result read from Redis is data, never code (issue 33)."""
    from casino.celery import app

    assert list(app.conf.accept_content) == ["json"]
    assert list(app.conf.result_accept_content) == ["json"]
    assert app.conf.task_serializer == app.conf.result_serializer == "json"
