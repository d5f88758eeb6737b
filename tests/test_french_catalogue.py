"""The French catalogue is complete, now and whenever someone adds a string.

`makemessages` runs over a temporary copy of the sources and the locale
directory (the repository is never written to: makemessages drops `.py`
copies of templates beside them while it works), so a string added in code
or a template and not yet in django.po shows up as untranslated here. Every
untranslated or fuzzy msgid is listed in the failure. The committed
django.mo must be the compiled django.po (a stale .mo serves yesterday's
French). Needs GNU gettext (xgettext, msgmerge, msgfmt): apt-get install
gettext; skipped without it on a laptop, a failure under CI.
"""

from __future__ import annotations

import gettext
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import _missing

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "locale"
FR = LOCALE / "fr" / "LC_MESSAGES"
# What makemessages reads: the apps, the templates and the page scripts (the
# vendored libraries are not ours). Tests and benchmarks hold no user-facing
# strings.
SOURCES = ["manage.py", "casino", "tables", "audit", "templates", "static", "tools"]
IGNORE = ["static/vendor/*", "__pycache__", "migrations"]
# The page scripts take their sentences from the server (tables/tablet/
# state.py js_strings, in the django domain); a JS catalogue would be the
# djangojs domain, checked the same way should one appear.
DOMAINS = ["django", "djangojs"]
TOOLS = ["xgettext", "msgmerge", "msgfmt"]
# Run from the repository: what the copy above leaves out is ignored there.
REFRESH = (
    "To bring them into the catalogue, then translate them and compile:\n"
    "  .venv/bin/python manage.py makemessages -l fr "
    + " ".join(
        f"--ignore '{p}'"
        for p in [*IGNORE, "tests/*", "bench/*", "docs/*", "var/*"]
    )
    + "\n  .venv/bin/python manage.py compilemessages -l fr"
)


@dataclass
class Entry:
    msgid: str = ""
    context: str | None = None
    plural: str | None = None
    msgstr: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    obsolete: bool = False

    def label(self) -> str:
        return f"[{self.context}] {self.msgid}" if self.context else self.msgid


ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def _unquote(s: str) -> str:
    s = s.strip()
    assert s.startswith('"') and s.endswith('"'), s
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m[1], m[0]), s[1:-1])


def parse_po(text: str) -> list[Entry]:
    """A PO file's entries (header excluded): enough of the format for
    what msgmerge writes."""
    entries: list[Entry] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        e, target = Entry(), None
        for raw in block.splitlines():
            line = raw
            if line.startswith("#~"):
                e.obsolete = True
                line = line[2:].lstrip()
                if line.startswith("|"):
                    continue
            elif line.startswith("#,"):
                e.flags |= {f.strip() for f in line[2:].split(",")}
                continue
            elif line.startswith("#") or not line.strip():
                continue
            key, _, rest = line.partition(" ")
            if line.startswith('"'):
                value = _unquote(line)
                if target == "msgid":
                    e.msgid += value
                elif target == "msgctxt":
                    e.context = (e.context or "") + value
                elif target == "msgid_plural":
                    e.plural = (e.plural or "") + value
                else:
                    e.msgstr[-1] += value
                continue
            if key == "msgid":
                target, e.msgid = "msgid", _unquote(rest)
            elif key == "msgctxt":
                target, e.context = "msgctxt", _unquote(rest)
            elif key == "msgid_plural":
                target, e.plural = "msgid_plural", _unquote(rest)
            elif key.startswith("msgstr"):
                target = "msgstr"
                e.msgstr.append(_unquote(rest))
        if e.msgid or e.context:  # not the header
            entries.append(e)
    return entries


def problems(entries: list[Entry]) -> tuple[list[str], list[str]]:
    live = [e for e in entries if not e.obsolete]
    untranslated = [
        e.label() for e in live if not e.msgstr or not all(s for s in e.msgstr)
    ]
    fuzzy = [e.label() for e in live if "fuzzy" in e.flags]
    return untranslated, fuzzy


def _gettext_tools() -> None:
    absent = [t for t in TOOLS if shutil.which(t) is None]
    if absent:
        _missing(
            "GNU gettext (" + ", ".join(absent) + ")",
            "apt-get install gettext: makemessages and msgfmt need it",
        )


@pytest.fixture(scope="module")
def fresh_catalogue(tmp_path_factory) -> dict[str, Path]:
    """makemessages over a copy of the working tree; {domain: merged .po}."""
    _gettext_tools()
    work = tmp_path_factory.mktemp("makemessages")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=skip)
        else:
            shutil.copy2(src, work / name)
    shutil.copytree(LOCALE, work / "locale", ignore=skip)
    out = {}
    for domain in DOMAINS:
        cmd = [sys.executable, "manage.py", "makemessages", "-l", "fr", "-d", domain]
        for pattern in IGNORE:
            cmd += ["--ignore", pattern]
        run = subprocess.run(
            cmd, cwd=work, capture_output=True, text=True, env=os.environ.copy()
        )
        assert run.returncode == 0, run.stdout + run.stderr
        po = work / "locale" / "fr" / "LC_MESSAGES" / f"{domain}.po"
        if po.exists():
            out[domain] = po
    assert "django" in out, "makemessages found no translatable string at all"
    return out


def test_every_string_of_the_code_is_translated_into_french(fresh_catalogue):
    report = []
    for domain, po in fresh_catalogue.items():
        untranslated, fuzzy = problems(parse_po(po.read_text(encoding="utf-8")))
        if untranslated:
            report.append(
                f"{domain}: {len(untranslated)} untranslated msgid(s) "
                "(not in locale/fr/LC_MESSAGES/" + domain + ".po, or empty there):\n  "
                + "\n  ".join(repr(m) for m in untranslated)
            )
        if fuzzy:
            report.append(
                f"{domain}: {len(fuzzy)} fuzzy msgid(s) (review, then drop the "
                "fuzzy flag):\n  " + "\n  ".join(repr(m) for m in fuzzy)
            )
    assert not report, "\n".join([*report, REFRESH])


def test_the_committed_catalogue_has_no_untranslated_or_fuzzy_entry():
    # The committed file on its own (what compilemessages serves), with the
    # placeholders each translation must keep.
    for po in sorted(FR.glob("*.po")):
        entries = parse_po(po.read_text(encoding="utf-8"))
        untranslated, fuzzy = problems(entries)
        assert not untranslated, f"{po.name}: untranslated {untranslated}"
        assert not fuzzy, f"{po.name}: fuzzy {fuzzy}"
        broken = []
        for e in entries:
            if e.obsolete:
                continue
            for pattern in (r"\{\w*\}", r"%\(\w+\)[sd]", r"%[sd]"):
                wanted = sorted(re.findall(pattern, e.plural or e.msgid))
                wanted_singular = sorted(re.findall(pattern, e.msgid))
                for s in e.msgstr:
                    got = sorted(re.findall(pattern, s))
                    if got != wanted and got != wanted_singular:
                        broken.append(f"{e.label()!r} -> {s!r}")
        assert not broken, "placeholders changed:\n" + "\n".join(broken)


def test_the_committed_mo_is_the_compiled_po(tmp_path):
    _gettext_tools()
    stale = []
    for po in sorted(FR.glob("*.po")):
        mo = po.with_suffix(".mo")
        assert mo.exists(), f"{mo} is missing: manage.py compilemessages -l fr"
        fresh = tmp_path / mo.name
        run = subprocess.run(
            ["msgfmt", "--check-format", "-o", str(fresh), str(po)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        with fresh.open("rb") as f:
            want = gettext.GNUTranslations(f)._catalog
        with mo.open("rb") as f:
            have = gettext.GNUTranslations(f)._catalog
        if want != have:
            differ = sorted(
                str(k) for k in set(want) | set(have) if want.get(k) != have.get(k)
            )
            stale.append(f"{mo.name}: {len(differ)} entries differ, e.g. {differ[:5]}")
    assert not stale, (
        "the committed .mo is stale: .venv/bin/python manage.py "
        "compilemessages -l fr\n" + "\n".join(stale)
    )


def test_the_checker_sees_an_untranslated_and_a_fuzzy_string():
    # The test must be able to fail: a msgid added to the code and merged
    # untranslated, one merged as a fuzzy guess, a half-done plural.
    po = (
        'msgid ""\nmsgstr ""\n"Language: fr\\n"\n\n'
        '#: a.py:1\nmsgid "Done"\nmsgstr "Fait"\n\n'
        '#: a.py:2\nmsgid "New string"\nmsgstr ""\n\n'
        '#: a.py:3\n#, fuzzy, python-format\nmsgid "Near %s"\nmsgstr "Près %s"\n\n'
        '#: a.py:4\nmsgid "one"\nmsgid_plural "many"\nmsgstr[0] "un"\nmsgstr[1] ""\n\n'
        '#: a.py:5\nmsgctxt "card"\nmsgid ""\n"long "\n"line"\nmsgstr ""\n\n'
        '#~ msgid "Gone"\n#~ msgstr ""\n'
    )
    untranslated, fuzzy = problems(parse_po(po))
    assert untranslated == ["New string", "one", "[card] long line"]
    assert fuzzy == ["Near %s"]


@pytest.mark.django_db
def test_a_croupier_reads_natural_french(client, croupier):
    # The settings page's PIN confirmation, and the pad's letters.
    client.force_login(croupier)
    page = client.get("/tablet/preferences/", HTTP_ACCEPT_LANGUAGE="fr")
    html = page.content.decode()
    assert "Saisissez à nouveau le même code PIN" in html
    assert "encore une fois" not in html and "encore un" not in html
    from django.utils import translation

    from tables.cards import card_label, card_name, hands_name

    with translation.override("fr"):
        assert [card_label(c) for c in ("KS", "QH", "JD", "AC", "TD")] == [
            "R♠", "D♥", "V♦", "A♣", "10♦",
        ]
        assert card_name("TH") == "10 de cœur"
        assert hands_name(["TH", "6D"], ["KS"]) == (
            "Ponte : 10 de cœur, 6 de carreau · Banquier : roi de pique"
        )
    with translation.override("en"):
        assert hands_name(["TH", "6D"], ["KS"]) == (
            "Punter: 10 of hearts, 6 of diamonds · Banker: king of spades"
        )


def test_a_label_s_colon_follows_each_language(client, pitboss):
    """French sets a no-break space before a colon ("Tables ouvertes : 0"),
    English none ("Open tables: 0"): the templates' colons go through the
    catalogue ({% translate ":" %}, as Django's own label_suffix)."""
    client.force_login(pitboss)
    fr = client.get("/floor/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    en = client.get("/floor/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Tables ouvertes\u00a0: " in fr and "Tables ouvertes:" not in fr
    assert "Open tables: " in en and "\u00a0:" not in en
