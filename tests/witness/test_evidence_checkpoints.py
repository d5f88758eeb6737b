"""The evidence bundle carries its windows' checkpoints and their
cosignatures (audit/evidence/witnessed.py), and the standalone verifier,
run where Django cannot be imported, recomputes each checkpoint's root from
the windows' own rows (tools/evidence_verifier/witnessed.py): a clean
bundle cosigned by a real witness process verifies, and each forgery is
named."""

from __future__ import annotations

import json
import zipfile

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.evidence.build import evidence_build
from casino.anchors import trail_anchor
from casino.checkpoints import checkpoint_publish
from casino.merkle import log_vkey
from tables.models import Coup
from tables.simulation import simulate
from tests.evidence.conftest import rewrite, signing_key, verify  # noqa: F401
from tests.witness.conftest import write
from tools.evidence_verifier import tlog
from tools.evidence_verifier.common import body, sha256_hex

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def witness(settings, signing_key, witness_factory):  # noqa: F811
    w = witness_factory("witness.example/w1", [log_vkey()])
    settings.WITNESSES = [{"url": w.url, "name": w.name, "vkey": w.vkey}]
    settings.WITNESS_QUORUM = 1
    return w


def _period() -> tuple:
    days = sorted(set(Coup.objects.values_list("gaming_day", flat=True)))
    return days[0], days[-1]


@pytest.fixture
def bundle(croupier, witness, tmp_path):
    """Rows before the period (the window of the rows sealed first closed by
    an anchor, so that the main one starts further on), the period played, a
    checkpoint inside its window, then the window's closing anchor and a
    checkpoint beyond it, each cosigned by the witness."""
    write(5, tag="before the period")
    trail_anchor(reason="test")  # the older rows' window closes here
    simulate(user=croupier, tables=2, shoes=1, seed=11)
    assert checkpoint_publish()["witnesses"][witness.name].startswith("cosigned")
    write(2, tag="before the anchor")
    trail_anchor(reason="test")
    write(3, tag="after the anchor")
    assert checkpoint_publish()["witnesses"][witness.name].startswith("cosigned")
    path = tmp_path / "bundle.zip"
    first, last = _period()
    evidence_build(from_day=first, to_day=last, path=path)
    return path


@pytest.fixture
def check(verify, signing_key):  # noqa: F811
    def run(path, *extra):
        done = verify(path, "--public-key", str(signing_key), *extra)
        return done.returncode, done.stdout + done.stderr

    return run


def manifest_edited(bundle, out, edit, drop: str = ""):
    """A copy of the bundle with its manifest changed by `edit` (and the
    part `drop` left out)."""
    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist() if n != drop}
    manifest = json.loads(parts["manifest.json"])
    edit(manifest)
    parts["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return out


def lines(path, name="checkpoints.jsonl") -> list[dict]:
    with zipfile.ZipFile(path) as z:
        return [json.loads(x) for x in z.read(name).splitlines()]


def test_a_clean_bundle_verifies_with_the_regulators_witness_key(
        bundle, check, witness):
    items = lines(bundle)
    checkpoints = [x for x in items if x["kind"] == "checkpoint"]
    segments = [x for x in items if x["kind"] == "segment"]
    assert len(checkpoints) == 2 and segments
    assert all(x["cosignatures"] for x in checkpoints)
    assert checkpoints[1]["consistency"]  # from the first to the second
    main = max(segments, key=lambda s: s["last_row"] - s["first_row"])
    assert main["left"], segments
    assert [c for c in main["checks"] if c["right"]]
    with zipfile.ZipFile(bundle) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["witness_keys"] == [witness.vkey]
    code, out = check(bundle, "--witness-key", witness.vkey)
    assert code == 0, out
    assert "checkpoints: the last row of each of the" in out
    assert "cosigned by witness.example/w1" in out
    code, out = check(bundle)  # the bundle's own list of witness keys
    assert code == 0, out
    assert "pass --witness-key to require your own" in out


def _relinked(edit_row):
    """A log row changed and every link of its window after it recomputed,
    as a forger without the signing key can."""
    def edit(name, items):
        if name != "log.jsonl":
            return None
        at = next(i for i, x in enumerate(items)
                  if x["action"] == "tables.coup.recorded")
        edit.id = items[at]["id"]
        old_prev, prev = items[at - 1]["link"], items[at - 1]["link"]
        for n, x in enumerate(items[at:]):
            if n and sha256_hex(body(old_prev, x)) != x["link"]:
                break  # the next window: its own seed
            old_prev = x["link"]
            if not n:
                edit_row(x)
            x["link"] = prev = sha256_hex(body(prev, x))
        return items

    return edit


def test_a_row_changed_with_its_links_recomputed(bundle, tmp_path, check):
    edit = _relinked(lambda r: r["new"].update(commission="123.45"))
    code, out = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1, out
    assert "its root is not the tree of log rows" in out
    assert f"log row {edit.id}" not in out  # the links themselves hold


def _edit_checkpoints(change):
    def edit(name, items):
        return change(items) if name == "checkpoints.jsonl" else None
    return edit


def _note_resigned(note: str, key) -> str:
    text = note[:note.rfind("\n\n") + 1]
    origin = text.split("\n")[0]
    return text + "\n" + tlog.note_sign(text, origin, key)


def test_a_checkpoint_signed_by_another_key(bundle, tmp_path, check):
    other = Ed25519PrivateKey.generate()

    def change(items):
        cp = next(x for x in items if x["kind"] == "checkpoint")
        cp["note"] = _note_resigned(cp["note"], other)
        return items

    code, out = check(rewrite(bundle, tmp_path / "x.zip", _edit_checkpoints(change)))
    assert code == 1, out
    assert "not signed by a key given with --public-key" in out


def test_a_cosignature_of_another_witness_key(bundle, tmp_path, check, witness):
    other = Ed25519PrivateKey.generate()

    def change(items):
        for cp in (x for x in items if x["kind"] == "checkpoint"):
            text = cp["note"][:cp["note"].rfind("\n\n") + 1]
            cp["cosignatures"] = [tlog.cosign(text, witness.name, other, 1_800_000_000)]
        return items

    forged = rewrite(bundle, tmp_path / "x.zip", _edit_checkpoints(change))
    code, out = check(forged, "--witness-key", witness.vkey)
    assert code == 1, out
    assert "a cosignature by witness.example/w1 (key ID" in out
    assert "of no witness the bundle lists or --witness-key gives" in out
    assert "is cosigned by 0 of the witnesses given (none); quorum 1" in out
    # the bundle's own list changed with it: the regulator's key still refuses
    def listed(manifest):
        manifest["witness_keys"] = [tlog.vkey(witness.name, tlog.public_raw(
            other.public_key()), tlog.ALG_COSIGNATURE_V1)]

    again = manifest_edited(forged, tmp_path / "y.zip", listed)
    code, out = check(again)
    assert code == 0, out  # the bundle alone cannot tell: hence --witness-key
    code, out = check(again, "--witness-key", witness.vkey)
    assert code == 1 and "quorum 1" in out, out


def test_a_consistency_proof_broken(bundle, tmp_path, check):
    def change(items):
        cp = [x for x in items if x["kind"] == "checkpoint"][1]
        h = bytearray(tlog.unb64(cp["consistency"][0], "h"))
        h[0] ^= 1
        cp["consistency"][0] = tlog.b64(bytes(h))
        return items

    code, out = check(rewrite(bundle, tmp_path / "x.zip", _edit_checkpoints(change)))
    assert code == 1, out
    assert "the consistency proof from" in out and "does not hold" in out


def test_checkpoints_removed(bundle, tmp_path, check, witness):
    forged = rewrite(bundle, tmp_path / "x.zip", _edit_checkpoints(lambda items: []))
    code, out = check(forged)
    assert code == 0, out
    assert "WARNING: log window" in out and "with --witness-key this fails" in out
    code, out = check(forged, "--witness-key", witness.vkey)
    assert code == 1, out
    assert "is in no checkpoint the bundle carries" in out
    # only the closing checkpoint removed: the window's tail is covered by none
    def change(items):
        last = [x for x in items if x["kind"] == "checkpoint"][-1]
        size = tlog.checkpoint_parse(last["note"][:last["note"].rfind("\n\n") + 1]).size
        items.remove(last)
        for seg in (x for x in items if x["kind"] == "segment"):
            seg["checks"] = [c for c in seg["checks"] if c["size"] != size]
        return items

    code, out = check(rewrite(bundle, tmp_path / "y.zip", _edit_checkpoints(change)),
                      "--witness-key", witness.vkey)
    assert code == 1, out
    assert "is in no checkpoint the bundle carries" in out


def test_a_truncated_window(bundle, tmp_path, check):
    def edit(name, items):
        if name == "log.jsonl":
            return items[:-2]
        return None

    code, out = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1, out
    assert "the last of the leaves its checkpoints were made with (rows removed)" in out


@pytest.mark.parametrize("how", ["note", "garbage", "left", "consistency", "kind",
                                 "size"])
def test_malformed_checkpoint_members_are_unreadable(bundle, tmp_path, check, how):
    def change(items):
        cp = next(x for x in items if x["kind"] == "checkpoint")
        seg = next(x for x in items if x["kind"] == "segment")
        if how == "note":
            cp["note"] = 12
        elif how == "garbage":
            cp["note"] = "not a note"
        elif how == "left":
            seg["left"] = seg["left"] + [seg["left"][0]] if seg["left"] else ["AA=="]
        elif how == "consistency":
            cp["consistency"] = ["!!"]
        elif how == "kind":
            cp["kind"] = "other"
        else:
            seg["checks"][0]["size"] = "7"
        return items

    code, out = check(rewrite(bundle, tmp_path / "x.zip", _edit_checkpoints(change)))
    assert code == 2, out
    assert "UNREADABLE: checkpoints.jsonl line" in out
    assert "Traceback" not in out


def _mutant(rng, items: list[dict]) -> list:
    """One random change to checkpoints.jsonl's lines: a field dropped or of
    another type (at the top or one level down), a line removed, repeated,
    swapped or replaced."""
    from tests.evidence.test_malformed import ODD

    i, j = rng.randrange(len(items)), rng.randrange(len(items))
    kind = rng.randrange(4)
    if kind < 2:
        obj = items[i]
        inner = [v for v in obj.values() if isinstance(v, list) and v
                 and isinstance(v[0], dict)]
        if inner and rng.random() < 0.5:
            obj = rng.choice(inner[0])
        key = rng.choice(sorted(obj))
        if kind == 0:
            del obj[key]
        else:
            obj[key] = rng.choice(ODD)
    elif kind == 2:
        items.insert(i, items[j]) if rng.random() < 0.5 else items.pop(i)
    else:
        items[i], items[j] = items[j], rng.choice([items[i], *ODD[:6]])
    return items


def test_fuzzed_checkpoints_never_crash(bundle, tmp_path, signing_key):  # noqa: F811
    """Forty mutants of the part, verified in one Python with only
    `cryptography` and a memory limit (tests/evidence/test_malformed.py's
    runner): each ends in 0, 1 or 2 with a sentence, never a traceback."""
    import random

    from tests.evidence.test_malformed import verdicts

    rng = random.Random(37)
    files = []
    for n in range(40):
        path = tmp_path / f"m{n}.zip"
        rewrite(bundle, path, _edit_checkpoints(lambda items: _mutant(rng, items)))
        files.append(path)
    codes, _peak = verdicts(tmp_path, files, signing_key)
    assert codes.get(2, 0) > 5 and codes.get(1, 0) > 5, codes


def test_no_witness_configured_is_a_warning(croupier, signing_key, settings,  # noqa: F811
                                            tmp_path, check):
    settings.WITNESSES, settings.WITNESS_QUORUM = [], 0
    simulate(user=croupier, tables=1, shoes=1, seed=5)
    path = tmp_path / "b.zip"
    evidence_build(from_day=_period()[0], to_day=_period()[1], path=path)
    assert lines(path) == []
    code, out = check(path)
    assert code == 0, out
    assert "WARNING: log window" in out
    key = Ed25519PrivateKey.generate()
    vkey = tlog.vkey("w.example/x", tlog.public_raw(key.public_key()),
                     tlog.ALG_COSIGNATURE_V1)
    code, out = check(path, "--witness-key", vkey)
    assert code == 1, out
    assert "no witness configured, or the bundle was built before" in out
    # a bundle of an earlier release (no checkpoints.jsonl) is read as none
    def earlier(manifest):
        del manifest["parts"]["checkpoints.jsonl"], manifest["witness_keys"]

    old = manifest_edited(path, tmp_path / "old.zip", earlier,
                          drop="checkpoints.jsonl")
    code, out = check(old)
    assert code == 0, out
    code, out = check(old, "--witness-key", vkey)
    assert code == 1 and "the bundle carries no checkpoints.jsonl" in out, out


def test_a_bad_witness_key_option_is_unreadable(bundle, check):
    code, out = check(bundle, "--witness-key", "nonsense")
    assert code == 2 and "UNREADABLE: --witness-key" in out, out


@pytest.mark.tampers
def test_a_window_across_a_declared_epoch(signing_key, witnesses, croupier,  # noqa: F811
                                          tmp_path, check):
    """A dump restored and declared (casino/epochs.py) inside the period's
    window: the window's rows are leaves of two logs (the epoch's origin
    names the second), each checked against its own checkpoints."""
    import io

    from django.core.management import call_command

    from casino.models import ChangeLog
    from tests.witness.conftest import cosigned_then_restored

    simulate(user=croupier, tables=1, shoes=1, seed=5)
    cosigned_then_restored(3, 4)
    checkpoint_publish()  # the witnesses name the rollback: writes stop
    call_command("trail_epoch", "--reason", "restored the 21:00 dump",
                 stdout=io.StringIO())
    declared = ChangeLog.objects.get(action="casino.trail.epoch_declared")
    for w in witnesses:
        w.stop()
        w.logs.append(declared.new["log_key"])
        w.start()
    write(3, tag="after the declaration")
    trail_anchor(reason="test")
    checkpoint_publish()
    path = tmp_path / "bundle.zip"
    evidence_build(from_day=_period()[0], to_day=_period()[1], path=path)
    origins = {x["origin"] for x in lines(path) if x["kind"] == "segment"}
    assert len(origins) == 2, lines(path)
    code, out = check(path, *(a for w in witnesses for a in ("--witness-key", w.vkey)))
    assert code == 0, out
    # the flag row the rollback raised, before the declaration, is in neither
    # log's tree: the declaration's link binds it
    flag = ChangeLog.objects.filter(id__lt=declared.pk).order_by("-id").first()
    assert f"rows {flag.pk}-{flag.pk} are in no checkpoint's tree" in out
    assert "cosigned by witness.example/w1, witness.example/w2" in out


def test_the_closing_checkpoint_is_the_earliest_the_quorum_cosigned(
        signing_key, witnesses, settings):  # noqa: F811
    """A window ending where a witness was down: the bundle closes it with the
    next checkpoint both cosigned, not the earliest holding its last row
    (and without a quorum to meet, the earliest); inside it, the last
    checkpoint of the hour."""
    from audit.evidence.witnessed import _chosen
    from casino.models import Checkpoint

    write(3)
    checkpoint_publish()
    witnesses[1].stop()
    write(2)
    checkpoint_publish()  # cosigned by w1 alone
    witnesses[1].start()
    write(2)
    checkpoint_publish()  # by both
    first, alone, both = Checkpoint.objects.order_by("size")
    assert alone.cosignatures.count() == 1 and both.cosignatures.count() == 2
    chosen = _chosen(1, 0, alone.size)
    assert chosen == [alone, both]  # (alone: the hour's last inside it)
    assert _chosen(1, 0, first.size) == [first]
    settings.WITNESSES, settings.WITNESS_QUORUM = [], 0
    assert _chosen(1, 0, alone.size) == [alone]
    assert _chosen(1, 0, first.size - 1) == [first]
