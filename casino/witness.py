"""The witnesses (issue 37): each checkpoint (casino/merkle.py) goes to every
witness of WITNESS_URLS with a consistency proof from the size that witness
last cosigned (c2sp.org/tlog-witness add-checkpoint); its cosignature/v1 is
checked against the witness's configured key and kept (casino.Cosignature).

A witness down or slow stops nothing: the push runs in the `trail.checkpoint`
task, never in a request, and beat runs it every WITNESS_CHECK_SECONDS, which
brings a lagging witness up to the latest checkpoint and, when nothing was
written, submits the latest checkpoint again: a witness that holds a larger
tree than the database answers 409 with its size, which is how a restored
dump or a cut tail is seen with no write after it. What a witness refuses is
named (`fork_record`: a critical flag, and writes stop):

- 409 with a larger size than the database's tree: `behind` ("the database
  holds N rows; witness w1 cosigned M");
- 409 for the same size (another root) or 422 (the proof from the size it
  holds does not verify): `fork`.

What the witnesses cosigned is also remembered outside the database
(`witnessed_remember`: the shared cache, Redis, which a dump restored into
PostgreSQL does not restore), so that the idle checkpoint tick, every second,
can see cheaply (one cache read, one indexed look-up) that the database's tree
is smaller than a tree a witness cosigned and ask the witnesses at once
(`witnessed_beyond_database`), instead of waiting for WITNESS_CHECK_SECONDS.
The hint only triggers the asking: the witness's answer is what names a
rollback (a forged or stale hint costs one request; a lost one, the wait).

`witness_compare` is what verify_trail, /health/details/ and the trail page
say: the database against the latest cosigned checkpoint of each witness,
and whether the quorum (WITNESS_QUORUM) cosigned the latest checkpoint.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from tools.evidence_verifier import tlog

from .merkle import DbNodes, current_epoch, fork_record
from .models import ChangeLog, Checkpoint, Cosignature, TreeNode
from .trailstop import stop_reason_event

log = logging.getLogger("casino.witness")
SIZE_TYPE = "text/x.tlog.size"
WITNESSED_KEY = "trail:witnessed"
WITNESSED_SECONDS = 7 * 24 * 3600  # idle longer: WITNESS_CHECK_SECONDS alone


def witnessed_remember(epoch: int, size: int) -> None:
    """A witness cosigned the tree of `size` in `epoch`: kept in the shared
    cache (outside the database) if larger than what it holds."""
    try:
        seen = cache.get(WITNESSED_KEY)
        if not seen or (seen["epoch"], seen["size"]) < (epoch, size):
            cache.set(WITNESSED_KEY, {"epoch": epoch, "size": size},
                      WITNESSED_SECONDS)
    except Exception as exc:  # noqa: BLE001 (a cache down: the slow path only)
        log.warning("the witnessed size is not remembered (%s)", exc)


def witnessed_beyond_database() -> bool:
    """Whether the witnesses cosigned a larger tree than the database now
    holds (a restored dump, a cut tail, a restore of an earlier epoch), as
    the cache remembers it; False when writes are stopped already."""
    try:
        seen = cache.get(WITNESSED_KEY)
    except Exception as exc:  # noqa: BLE001
        log.warning("the witnessed size is not readable (%s)", exc)
        return False
    if not isinstance(seen, dict):
        return False
    epoch = current_epoch()[0]
    if seen.get("epoch") != epoch:
        return isinstance(seen.get("epoch"), int) and seen["epoch"] > epoch
    leaf = (TreeNode.objects.filter(epoch=epoch, level=0).order_by("-index")
            .values_list("index", flat=True).first())
    last = (Checkpoint.objects.filter(epoch=epoch).order_by("-id")
            .values_list("size", flat=True).first())
    held = min(-1 if leaf is None else leaf + 1, last or 0)
    if not isinstance(seen.get("size"), int) or seen["size"] <= held:
        return False
    return stop_reason_event() is None


def _verifier(witness: dict) -> tlog.Verifier:
    return tlog.parse_vkey(witness["vkey"])


def _post(url: str, body: bytes) -> tuple[int, str, str]:
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Content-Type": "text/plain; charset=utf-8"})
    try:
        with urllib.request.urlopen(request, timeout=settings.WITNESS_TIMEOUT) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read(65536).decode(
                "utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read(65536).decode(
            "utf-8", "replace")


def last_cosigned(name: str, epoch: int | None = None) -> Cosignature | None:
    """The largest checkpoint of the epoch (the current one) `name` cosigned."""
    epoch = current_epoch()[0] if epoch is None else epoch
    return (Cosignature.objects.filter(witness=name, checkpoint__epoch=epoch)
            .select_related("checkpoint")
            .order_by("-checkpoint__size", "-id").first())


def epoch_rows() -> int:
    """The change-log rows of the current epoch (from its declaration on)."""
    return ChangeLog.objects.filter(id__gte=current_epoch()[1]).count()


def _clock(at: datetime) -> str:
    return timezone.localtime(at).strftime("%H:%M:%S")


def _keep(witness: dict, cp: Checkpoint, answer: str) -> Cosignature:
    text = cp.note[:cp.note.rfind("\n\n") + 1]
    verifier = _verifier(witness)
    found = None
    for sig in tlog.parse_signature_lines(answer):
        if (sig.name, sig.key_id) != (verifier.name, verifier.key_id):
            continue  # another key of the witness's: ignored, as the spec says
        ts = tlog.cosignature_check(text, sig, verifier)
        found = (sig, ts)
    if found is None:
        raise tlog.ProofError(f"{witness['name']} answered no cosignature of its key")
    sig, ts = found
    witnessed_remember(cp.epoch, cp.size)
    old = Cosignature.objects.filter(checkpoint=cp, witness=witness["name"]).first()
    if old is not None:
        return old  # cosigned again (an idle re-submission): one is evidence enough
    return Cosignature.objects.create(
        checkpoint=cp, witness=witness["name"], line=sig.line(),
        time=datetime.fromtimestamp(ts, tz=UTC))


def push_one(witness: dict, cp: Checkpoint) -> str:
    """Bring one witness to checkpoint `cp`: what happened, in words."""
    name = witness["name"]
    last = last_cosigned(name, cp.epoch)
    old = last.checkpoint.size if last else 0
    url = witness["url"] + "/add-checkpoint"
    for _attempt in range(3):
        if old > cp.size:
            return _behind(witness, cp, old, last)
        body = tlog.add_checkpoint_body(
            old, tlog.consistency_proof(DbNodes(epoch=cp.epoch).get, old, cp.size),
            cp.note)
        try:
            status, ctype, text = _post(url, body)
        except (OSError, urllib.error.URLError) as exc:
            log.warning("witness %s is down or slow (%s): retried later", name, exc)
            return f"down: {exc}"
        if status == 200:
            try:
                _keep(witness, cp, text)
            except tlog.ProofError as exc:
                return f"refused: {exc}"
            return f"cosigned {cp.size}"
        if status == 409 and ctype.startswith(SIZE_TYPE):
            try:
                held = int(text.strip())
            except ValueError:
                return f"refused: 409 without a size ({text[:80]!r})"
            if held == old:
                fork_record("fork", f"witness {name} cosigned another tree of "
                            f"{held} rows than the database's", witness=name,
                            size=held, request=body.decode())
                return f"fork at {held}"
            old, last = held, None
            continue
        if status == 422:
            fork_record("fork", f"witness {name} holds a tree of {old} rows that "
                        f"the database's tree of {cp.size} rows does not extend "
                        "(the consistency proof fails: the chain was rewritten)",
                        witness=name, size=old, request=body.decode())
            return f"fork from {old}"
        return f"refused: {status} {text[:200]}"
    return "refused: the witness's size keeps changing"


def _behind(witness: dict, cp: Checkpoint, held: int, last) -> str:
    rows = epoch_rows()
    when = f" at {_clock(last.time)}" if last is not None else ""
    fork_record("behind", f"the database holds {rows:,} rows; witness "
                f"{witness['name']} cosigned {held:,}{when} (a restored dump or a "
                "cut tail: rows are missing)", witness=witness["name"], size=held)
    return f"behind: the witness holds {held}"


def witnesses_push() -> dict[str, str]:
    cp = Checkpoint.objects.filter(epoch=current_epoch()[0]).order_by("-id").first()
    if cp is None:
        return {}
    return {w["name"]: push_one(w, cp) for w in settings.WITNESSES}


@dataclass
class Comparison:
    ok: bool
    rows: int
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cosigned: dict[str, dict] = field(default_factory=dict)


def _n(number: int) -> str:
    """A count as the active language writes it (1,204; 1 204 in French);
    with translation off (no language), as English does."""
    if get_language() is None:
        return f"{number:,}"
    return number_format(number, force_grouping=True)


def witness_compare(*, full: bool = False) -> Comparison:
    """The database against the latest cosigned checkpoint of each witness
    (each cosignature checked against the witness's key); `full` recomputes
    the root of the cosigned size from the change log's links (verify_trail),
    else the row count only (/health/details/). In the active language (the
    trail page's; English for verify_trail and the health check); what a
    fork's record says is quoted as it was recorded."""
    epoch, start = current_epoch()
    rows = epoch_rows()
    out = Comparison(True, rows)
    if epoch > 1:
        out.notes.append(_("log epoch %(epoch)s since row %(row)s (a declared loss: "
                           "manage.py trail_epoch)") % {"epoch": epoch, "row": start})
    stop = stop_reason_event()
    if stop is not None:
        out.problems.append(
            _("writes stopped: %(detail)s (named at %(time)s; `manage.py "
              "trail_epoch` declares it)") % {"detail": stop.detail,
                                             "time": _clock(stop.at)})
    latest = Checkpoint.objects.filter(epoch=epoch).order_by("-id").first()
    links = None
    quorum = 0
    for w in settings.WITNESSES:
        last = last_cosigned(w["name"], epoch)
        if last is None:
            out.notes.append(_("witness %(name)s has cosigned nothing yet")
                             % {"name": w["name"]})
            continue
        cp = last.checkpoint
        text = cp.note[:cp.note.rfind("\n\n") + 1]
        try:
            (sig,) = tlog.parse_signature_lines(last.line)
            tlog.cosignature_check(text, sig, _verifier(w))
            tlog.checkpoint_parse(text)
        except (tlog.ProofError, ValueError) as exc:
            out.problems.append(
                _("the cosignature of %(name)s on checkpoint %(size)s does not hold "
                  "(%(why)s)") % {"name": w["name"], "size": _n(cp.size),
                                  "why": exc})
            continue
        out.cosigned[w["name"]] = {"size": cp.size, "at": last.time.isoformat()}
        if latest is not None and cp.pk == latest.pk:
            quorum += 1
        if rows < cp.size:
            out.problems.append(
                _("the database holds %(rows)s rows; witness %(name)s cosigned "
                  "%(size)s at %(time)s") % {"rows": _n(rows), "name": w["name"],
                                              "size": _n(cp.size),
                                              "time": _clock(last.time)})
            continue
        if full:
            if links is None:
                links = list(ChangeLog.objects.filter(id__gte=start).order_by("id")
                             .values_list("link", flat=True))
            tree = tlog.MemoryTree([_leaf(x) for x in links[:cp.size]])
            if tree.root() != tlog.checkpoint_parse(text).root:
                out.problems.append(
                    _("the database's first %(size)s rows are not the tree witness "
                      "%(name)s cosigned at %(time)s (a forked chain)")
                    % {"size": _n(cp.size), "name": w["name"],
                       "time": _clock(last.time)})
    if settings.WITNESSES and latest is not None and quorum < settings.WITNESS_QUORUM:
        out.notes.append(
            _("%(n)s of %(of)s witnesses cosigned the latest checkpoint (%(size)s); "
              "quorum %(quorum)s") % {"n": quorum, "of": len(settings.WITNESSES),
                                      "size": _n(latest.size),
                                      "quorum": settings.WITNESS_QUORUM})
    out.ok = not out.problems
    return out


def _leaf(link: str) -> bytes:
    try:
        return tlog.leaf_hash(bytes.fromhex(link or ""))
    except ValueError:
        return tlog.leaf_hash(b"")


def witness_status(*, full: bool = False) -> dict:
    """What the trail page shows of the witnesses: the latest checkpoint, the
    latest one a witness cosigned (its size, time and which witnesses), and
    the comparison (`witness_compare`: a shorter or forked chain named as
    verify_trail names it; `full` recomputes the cosigned roots, as
    verify_trail does)."""
    epoch = current_epoch()[0]
    latest = Checkpoint.objects.filter(epoch=epoch).order_by("-id").first()
    cosigned = (Checkpoint.objects.filter(epoch=epoch, cosignatures__isnull=False)
                .order_by("-size", "-id").first())
    by = []
    if cosigned is not None:
        by = [{"witness": c.witness, "time": c.time}
              for c in cosigned.cosignatures.order_by("witness")]
    each = []
    for w in settings.WITNESSES:  # what each one last cosigned, and when
        last = last_cosigned(w["name"], epoch)
        each.append({"name": w["name"],
                     "size": last.checkpoint.size if last else None,
                     "time": last.time if last else None,
                     "latest": bool(last and latest
                                    and last.checkpoint_id == latest.pk)})
    return {
        "configured": [w["name"] for w in settings.WITNESSES],
        "each": each,
        "quorum": settings.WITNESS_QUORUM,
        "epoch": epoch,
        "latest": latest,
        "cosigned": cosigned,
        "cosigned_by": by,
        "compare": witness_compare(full=full),
    }
