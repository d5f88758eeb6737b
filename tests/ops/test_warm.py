"""A web process is ready before its first request (casino/warm.py): the
URL modules imported, the templates compiled, the odds of the standard play
enumerated; without the database, and a warmer that fails only logs."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SHOW = """
import gc, json, sys
from django.template import engines
from tables.chemmy import odds
loaders = engines["django"].engine.template_loaders
cached = getattr(loaders[0], "get_template_cache", {})
print(json.dumps({
    "odds": odds._enumerate_mixed.cache_info().currsize,
    "views": "tables.api.views" in sys.modules and "audit.pages.floor" in sys.modules,
    "floor_template": "audit/floor.html" in cached,
    "tablet_template": "tablet/session.html" in cached,
    "frozen": gc.get_freeze_count() > 50000,
}))
"""


def _started(**env) -> dict:
    """A web process as gunicorn starts one (DEBUG off: the cached template
    loader), its database out of reach."""
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "REPLICA_DATABASE_URL", "CASINO_PROCESS",
                          "CASINO_WARM", "DEBUG"}}
    clean.update({
        "DATABASE_URL": "postgres://app@db.invalid:5432/casino",
        "DEBUG": "0", "SECRET_KEY": "warm-test-" + "s" * 50,
        "TRAIL_KEY": "warm-test-" + "k" * 40, "ALLOWED_HOSTS": "testserver",
        **env,
    })
    # a base64 Ed25519 seed that signs nothing (none is made here)
    clean.setdefault("TRAIL_SIGNING_KEY", base64.b64encode(b"w" * 32).decode())
    result = subprocess.run(
        [sys.executable, "-c", "import casino.wsgi\n" + SHOW], cwd=ROOT, env=clean,
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a_web_process_is_warm_before_its_first_request_without_the_database():
    warm = _started()
    # and what it holds is out of the collector's sight: a full collection
    # walks only what came since (casino/warm.py)
    assert warm == {"odds": 8, "views": True, "floor_template": True,
                    "tablet_template": True, "frozen": True}


def test_casino_warm_0_leaves_it_cold():
    cold = _started(CASINO_WARM="0")
    assert cold["odds"] == 0
    assert cold["floor_template"] is False
    assert cold["frozen"] is False


def test_a_failing_warmer_is_logged_and_the_others_still_run(caplog, monkeypatch):
    from casino import warm

    ran = []

    def broken():
        raise RuntimeError("no such thing")

    monkeypatch.setattr(warm, "WARMERS", [broken, lambda: ran.append("next")])
    monkeypatch.delenv("CASINO_WARM", raising=False)
    monkeypatch.setattr(warm.gc, "freeze", lambda: None)  # not this test process
    with caplog.at_level(logging.WARNING, logger="casino.warm"):
        warm.run()
    assert ran == ["next"]
    assert any("warm-up" in r.getMessage() and "broken" in r.getMessage()
               for r in caplog.records)
