"""Report jobs bound to the trail (casino/trail.py BOUND, issue 33 items 3-4):
the jobs written before this release are sealed as they stand, as casino 0010
sealed the rows it bound, so that their downloads (checked against the sealed
SHA-256, audit/reports/files.py) and the nightly close (which trusts only a
sealed job) keep working. Their files stay where they are: the path a
download derives is the name the build always wrote.

The chain is verified first: a broken chain is not blessed."""

from django.db import migrations
from django.utils import timezone

LABEL = "reports.reportjob"
COLUMNS = ("id", "at", "user_id", "device", "action", "object_type", "object_id",
           "reason", "old", "new", "ledger", "prev_hash", "hash", "key_id", "link")


def seal(apps, schema_editor):
    from casino.trail import (
        current_key,
        ledger_baseline,
        row_digests,
        seal_index,
        trail_keys,
        verify_rows,
    )

    ReportJob = apps.get_model("reports", "ReportJob")
    if not ReportJob.objects.exists():
        return  # a new install: nothing to seal
    ChangeLog = apps.get_model("casino", "ChangeLog")
    Seal = apps.get_model("casino", "Seal")
    rows = ChangeLog.objects.order_by("id").values(*COLUMNS).iterator(chunk_size=2000)
    check = verify_rows(rows, keys=trail_keys())
    if not check.ok:
        raise RuntimeError(
            f"the change log does not verify ({check.problem}): investigate "
            "before upgrading"
        )
    key_id, key = current_key()
    head = ChangeLog.objects.order_by("-id").first()
    prev, prev_link = (head.hash, head.link) if head else ("0" * 64, "0" * 64)
    for entries in ledger_baseline(apps, labels=(LABEL,)):
        row = dict(
            prev_hash=prev, at=timezone.now(), user_id=None, device="migration",
            action="casino.trail.ledger_sealed", object_type="", object_id="",
            reason="rows bound to the trail from this release, sealed as they stood",
            old=None, new={"rows": sum(len(v) for v in entries.values())},
            ledger=entries,
        )
        row["hash"], row["link"] = prev, prev_link = row_digests(
            key=key, prev_link=prev_link, **row)
        log = ChangeLog.objects.create(key_id=key_id, **row)
        Seal.objects.bulk_create(
            [Seal(label=label, key=k, log_id=log.pk)
             for label, k in seal_index(entries)], batch_size=5000)


class Migration(migrations.Migration):

    dependencies = [
        ("reports", "0007_evidence_kind"),
        ("casino", "0012_anchor_records"),
    ]

    operations = [migrations.RunPython(seal, migrations.RunPython.noop)]
