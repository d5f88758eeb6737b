"""Logs a collector can read (casino/logs.py): one JSON object per line with
the request's id, the user and the table, and never a secret, a PIN or a
token, even when a line tries to carry one."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from casino.logs import ContextFilter, RedactingJsonFormatter

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
# eight digits (the longest PIN the tablet takes): a four-digit one turned up
# by chance in a timestamp's microseconds
PIN = "86420975"
RIGHT_PIN = "13572468"


@pytest.fixture
def lines():
    """Every line the root logger writes during the test, as the production
    handler writes it (LOG_FORMAT=json): parsed, one object per line."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(RedactingJsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def read() -> tuple[str, list[dict]]:
        text = stream.getvalue()
        return text, [json.loads(line) for line in text.splitlines()]

    yield read
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_coup_request_logs_its_id_user_and_table_and_no_token(
        api, croupier, shoe, turn, lines):
    r = api.post("/api/v1/auth/token/", {"username": "croupier1",
                                          "password": "pw-croupier1"},
                 format="json")
    token = r.json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    body = {"punter": ["2H", "3D"], "banker": ["8C", "TS"],
            "stakes": [{"seat": 2, "amount": "300.00"}]}
    r = api.post(url, body, format="json",
                 headers={"Idempotency-Key": "log-1", "X-Request-ID": "lb-7f3a"})
    assert r.status_code == 201, r.content
    assert r["X-Request-ID"] == "lb-7f3a"
    # a body with a PIN in it (refused: no such field or a bad coup)
    r = api.post(url, {**body, "pin": PIN, "expected_seq": 99}, format="json")
    assert r.status_code in (400, 409), r.content
    assert r["X-Request-ID"]

    text, parsed = lines()
    assert parsed, "nothing was logged"
    assert token not in text and token[:12] not in text
    assert PIN not in text
    coup = [p for p in parsed if p.get("path") == url]
    assert len(coup) == 2, parsed
    first, second = coup
    assert first["request_id"] == "lb-7f3a"
    assert first["user"] == "croupier1"
    assert first["table"] == shoe.session.table_id
    assert first["status"] == 201 and first["method"] == "POST"
    assert first["level"] == "INFO" and first["logger"] == "casino.request"
    assert "time" in first and first["duration_ms"] >= 0
    assert second["request_id"] != first["request_id"]  # a new one per request
    assert len(second["request_id"]) == 32 and second["user"] == "croupier1"
    # every line of the coup request carries its id (Django's own too)
    for p in parsed:
        if p.get("path") == url or url in p.get("message", ""):
            assert p["request_id"] and p["user"] == "croupier1"


def test_the_tablet_unlock_never_logs_the_pin(client, croupier, croupier2, lines):
    from tables.tablet.models import profile_for

    profile = profile_for(croupier2)
    profile.set_pin(RIGHT_PIN)
    profile.save()
    client.force_login(croupier)
    client.post("/tablet/lock/", {"next": "/tablet/"})
    wrong = client.post("/tablet/unlock/", {"username": "croupier2", "pin": PIN})
    right = client.post("/tablet/unlock/", {"username": "croupier2", "pin": RIGHT_PIN})
    assert wrong.status_code in (400, 403) and right.status_code == 302
    text, parsed = lines()
    unlocks = [p for p in parsed if p.get("path") == "/tablet/unlock/"]
    assert len(unlocks) == 2 and all(p["request_id"] for p in unlocks), parsed
    assert PIN not in text and RIGHT_PIN not in text


def test_a_line_that_carries_a_secret_is_scrubbed(settings, lines):
    settings.METRICS_TOKEN = "metrics-secret-0123456789"
    from casino import logs

    logs._secret_values.cache_clear()
    try:
        log = logging.getLogger("casino.test")
        log.warning("key %s old %s", settings.TRAIL_KEY, settings.SECRET_KEY)
        log.warning("headers Authorization: Token 0a1b2c3d4e5f Bearer %s",
                    settings.METRICS_TOKEN)
        log.warning('unlock {"username": "croupier2", "pin": "%s"} pin=%s', PIN, PIN)
        try:
            raise ValueError(f"connect failed with password={settings.SECRET_KEY}")
        except ValueError:
            log.exception("database")
    finally:
        logs._secret_values.cache_clear()
    text, parsed = lines()
    for secret in (settings.TRAIL_KEY, settings.SECRET_KEY, settings.METRICS_TOKEN,
                   "0a1b2c3d4e5f", PIN):
        assert secret not in text, secret
    assert len(parsed) == 4 and "[redacted]" in parsed[0]["message"]
    assert "exc_info" in parsed[3] and "[redacted]" in parsed[3]["exc_info"]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_log_format_is_set_by_the_environment(fmt):
    script = ("import django, logging; django.setup();"
              "logging.getLogger('casino.x').warning('hello %s', 'there')")
    env = {**os.environ, "LOG_FORMAT": fmt, "DJANGO_SETTINGS_MODULE": "casino.settings"}
    env.pop("DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stderr
    line = [x for x in out.splitlines() if "hello" in x][-1]
    if fmt == "json":
        body = json.loads(line)
        assert body["message"] == "hello there" and body["level"] == "WARNING"
        assert body["logger"] == "casino.x" and body["request_id"] is None
    else:
        assert line.endswith("WARNING casino.x: hello there")


def test_a_bad_log_format_stops_the_start():
    env = {**os.environ, "LOG_FORMAT": "xml",
           "DJANGO_SETTINGS_MODULE": "casino.settings"}
    r = subprocess.run([sys.executable, "-c", "import django; django.setup()"],
                       env=env, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "LOG_FORMAT" in r.stderr
