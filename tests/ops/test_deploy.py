"""What an IT team copies from deploy/ (issue 36): the sample environment
names every variable the app reads, and nothing else, each marked; the
systemd units run the four processes as docs/operations.md says. (The nginx
server block is run for real in tests/ops/test_nginx.py.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# The readers of casino/settings.py whose first argument is a variable's name.
READERS = {"_read", "_strict_bool", "_limit", "_minutes", "_rate", "_db_url"}
# Read from the environment but not the operator's to set.
NOT_SETTINGS = {
    "DJANGO_SETTINGS_MODULE": "set by manage.py, casino/wsgi.py and casino/celery.py",
    "PYTEST_XDIST_WORKER": "set by pytest-xdist for a test run",
    "SUDO_USER": "the shell's: who ran `manage.py user add`, for the trail",
    "USER": "the shell's: who ran `manage.py user add`, for the trail",
}
ENTRY = re.compile(r"^# ([A-Z][A-Z0-9_]+) \(([^)]*)\):", re.M)


def _environ_name(node: ast.AST) -> str | None:
    """"X" of os.environ.get("X"), os.environ["X"], os.environ.setdefault("X"),
    os.getenv("X"), or a settings reader's _read("X", ...)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = (func.id if isinstance(func, ast.Name)
                else ast.unparse(func) if isinstance(func, ast.Attribute) else "")
        wanted = name in READERS or name in {
            "os.environ.get", "os.environ.setdefault", "os.getenv"}
        if wanted and node.args and isinstance(node.args[0], ast.Constant):
            return node.args[0].value
    if (isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ"
            and isinstance(node.slice, ast.Constant)):
        return node.slice.value
    return None


def variables_read() -> set[str]:
    """Every environment variable the app's code reads (settings, the apps,
    manage.py), found in its syntax tree."""
    files = [ROOT / "manage.py"]
    for app in ("casino", "tables", "audit"):
        files += [p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            name = _environ_name(node)
            if isinstance(name, str):
                names.add(name)
    return names - set(NOT_SETTINGS)


def env_entries() -> dict[str, set[str]]:
    text = (DEPLOY / "casino.env").read_text()
    entries: dict[str, set[str]] = {}
    for name, marks in ENTRY.findall(text):
        assert name not in entries, f"{name} twice in deploy/casino.env"
        entries[name] = {m.strip() for m in marks.split(",")}
        assert re.search(rf"^#?{name}=", text, re.M), (
            f"deploy/casino.env: {name} has its comment but no {name}= line")
    return entries


def test_the_reader_finds_the_variables():
    """The walk over the code finds variables of every kind of reader (so a
    change that hides them from it fails here, not silently)."""
    read = variables_read()
    assert {"DEBUG", "SECRET_KEY", "DATABASE_URL", "DB_LOCK_TIMEOUT",
            "TRAIL_ANCHOR_MINUTES", "COUP_THROTTLE", "MIGRATE_DATABASE_URL",
            "CASINO_WARM", "APP_DB_PASSWORD", "PROMETHEUS_MULTIPROC_DIR"} <= read


def test_every_variable_read_is_in_casino_env_and_nothing_else():
    read, listed = variables_read(), set(env_entries())
    assert sorted(read - listed) == [], "read by the app, missing from casino.env"
    assert sorted(listed - read) == [], "in casino.env, read by nothing"
    text = (DEPLOY / "casino.env").read_text()
    for name in read:  # no variable line without its marked comment
        lines = re.findall(rf"^#?{name}=.*$", text, re.M)
        assert len(lines) == 1, (name, lines)


def test_each_variable_is_marked():
    for name, marks in env_entries().items():
        assert len(marks & {"required", "optional"}) == 1, (name, marks)
        assert len(marks & {"all nodes", "per node"}) == 1, (name, marks)
        assert marks <= {"required", "optional", "secret", "all nodes",
                         "per node"}, (name, marks)


def test_what_production_needs_is_required_and_the_secrets_secret():
    entries = env_entries()
    # refused at start without them with DEBUG off, or wrong when left at the
    # default behind a proxy (issue 36: the nginx lines that did not work)
    for name in ("DEBUG", "SECRET_KEY", "TRAIL_KEY", "TRAIL_SIGNING_KEY",
                 "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "NUM_PROXIES",
                 "DATABASE_URL", "REDIS_URL", "TRAIL_ANCHOR_DIR", "MEDIA_ROOT"):
        assert "required" in entries[name], name
    for name in ("SECRET_KEY", "TRAIL_KEY", "TRAIL_OLD_KEYS", "TRAIL_SIGNING_KEY",
                 "DATABASE_URL", "MIGRATE_DATABASE_URL", "APP_DB_PASSWORD",
                 "REPORTS_DATABASE_URL", "REDIS_URL", "METRICS_TOKEN"):
        assert "secret" in entries[name], name
    text = (DEPLOY / "casino.env").read_text()
    # the owner's credentials are never set in a running node's file
    for name in ("MIGRATE_DATABASE_URL", "APP_DB_PASSWORD"):
        assert re.search(rf"^#{name}=", text, re.M), name
    assert re.search(r"^DEBUG=false$", text, re.M)


def unit(name: str) -> dict[str, list[str]]:
    """A systemd unit's keys (a key may repeat: ExecStart of a oneshot),
    continuation lines joined."""
    text = (DEPLOY / "systemd" / name).read_text().replace("\\\n", " ")
    keys: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            key, _, value = line.partition("=")
            keys.setdefault(key.strip(), []).append(" ".join(value.split()))
    return keys


def test_the_four_processes_and_their_units():
    api, pages = unit("casino-api.service"), unit("casino-pages.service")
    worker, beat = unit("casino-worker.service"), unit("casino-beat.service")
    clock = unit("casino-clock.service")
    for u in (api, pages, worker, clock, beat):
        assert u["EnvironmentFile"] == ["/etc/casino/casino.env"]
        assert u["User"] == ["casino"]
        assert u["PartOf"] == ["casino.target"]
    # two gunicorn pools, each on its own port and its own control socket
    assert "gunicorn casino.wsgi:application" in api["ExecStart"][0]
    assert "gunicorn casino.wsgi:application" in pages["ExecStart"][0]
    sockets = [re.search(r"--control-socket (\S+)", u["ExecStart"][0]).group(1)
               for u in (api, pages)]
    binds = [re.search(r"--bind (\S+)", u["ExecStart"][0]).group(1)
             for u in (api, pages)]
    assert len(set(sockets)) == 2 and len(set(binds)) == 2
    for u, sock in zip((api, pages), sockets, strict=True):
        assert sock.startswith(f"/run/{u['RuntimeDirectory'][0]}/")
    # the pages below the API in CPU priority; the API at the default
    assert pages["Nice"] == ["10"] and "Nice" not in api
    # the pools' processes and threads as the floor bench measured them
    # (docs/benchmarks.md) and docs/operations.md's table gives them
    table = (ROOT / "docs" / "operations.md").read_text()
    for name, u in (("API pool", api), ("pages pool", pages)):
        w, t = re.search(r"--workers (\d+) --threads (\d+)", u["ExecStart"][0]).groups()
        said = f"| {name} | {w} process{'' if w == '1' else 'es'} × {t} threads"
        assert said in table, (name, w, t)
    assert (w, t) == ("1", "2") and "--workers 4 --threads 2" in api["ExecStart"][0]
    assert " worker " in worker["ExecStart"][0]
    # a stop reaches the worker's main process alone, which finishes the tasks
    # at hand (the pool's children would die mid-task on a SIGTERM of their own)
    assert worker["KillMode"] == ["mixed"] and worker["KillSignal"] == ["SIGTERM"]
    assert clock["KillMode"] == ["mixed"] and clock["KillSignal"] == ["SIGTERM"]
    # every queue of the settings taken by a worker unit of its own, each
    # with its own node name (two workers on one machine)
    from django.conf import settings

    taken = {}
    for u in (worker, clock):
        line = u["ExecStart"][0]
        queues = re.search(r" -Q (\S+)", line).group(1).split(",")
        for q in queues:
            taken[q] = re.search(r" -n (\S+)", line).group(1)
    assert sorted(taken) == sorted(q.name for q in settings.CELERY_TASK_QUEUES)
    assert len(set(taken.values())) == 2 and all("%%H" in n for n in taken.values())
    assert beat["ExecStart"][0].endswith("celery -A casino beat -l info")
    # exactly one beat: no other unit runs one, nor a worker with -B
    others = [unit(p.name) for p in (DEPLOY / "systemd").glob("*.service")
              if p.name != "casino-beat.service"]
    for u in others:
        for line in u.get("ExecStart", []):
            assert " beat" not in line and " -B" not in line, line


def test_the_metrics_directory_is_emptied_before_the_pools_start():
    folder = unit("casino-metrics-dir.service")
    assert folder["Type"] == ["oneshot"] and folder["RemainAfterExit"] == ["yes"]
    assert folder["ExecStart"][0] == "/bin/rm -rf /run/casino-metrics"
    assert folder["ExecStart"][1].startswith("/usr/bin/install -d ")
    assert folder["ExecStart"][1].endswith(" /run/casino-metrics")
    for name in ("casino-api.service", "casino-pages.service"):
        u = unit(name)
        assert u["Environment"] == ["PROMETHEUS_MULTIPROC_DIR=/run/casino-metrics"]
        assert "casino-metrics-dir.service" in u["Requires"][0]
        assert "casino-metrics-dir.service" in u["After"][0]
    for name in ("casino-worker.service", "casino-clock.service",
                 "casino-beat.service"):
        assert "Environment" not in unit(name)
