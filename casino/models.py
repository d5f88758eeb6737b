"""The append-only change log: one row per write, in the same transaction."""

from django.conf import settings
from django.db import models
from knox.models import AbstractAuthToken


class AppendOnlyError(Exception):
    """Raised when code tries to change or delete an append-only record."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class AppendOnlyModel(models.Model):
    """A record that is written once. The database refuses changes too
    (PostgreSQL triggers, see casino/migrations), because Python alone is
    not a guard an auditor can rely on."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")


class ChangeLog(AppendOnlyModel):
    at = models.DateTimeField(db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    device = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=100, db_index=True)
    object_type = models.CharField(max_length=100, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    old = models.JSONField(null=True, blank=True)
    new = models.JSONField(null=True, blank=True)
    # Digests of the ledger rows this write inserted or changed (casino/trail.py).
    ledger = models.JSONField(null=True, blank=True)
    # The keyed chain (casino/trail.py): the digest of the row before this one,
    # this row's HMAC over its content and that link, and which key signed it.
    prev_hash = models.CharField(max_length=64, blank=True)
    hash = models.CharField(max_length=64, blank=True)
    key_id = models.CharField(max_length=16, blank=True)
    # The public link (casino/trail.py): SHA-256, no key, over the same content
    # and the previous row's link; anyone can walk it to a signed anchor.
    link = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]
        constraints = [
            # Two rows linking to the same predecessor would be a fork.
            models.UniqueConstraint(
                fields=["prev_hash"],
                condition=~models.Q(prev_hash=""),
                name="changelog_chain_no_fork",
            )
        ]

    def __str__(self) -> str:
        when = f"{self.at:%Y-%m-%d %H:%M:%S}"
        return f"{when} {self.action} {self.object_type}#{self.object_id}"


class Seal(AppendOnlyModel):
    """An index of the trail for the write path (casino/continuity.py): this
    (label, key) row was written by change-log row `log_id`. The last one is
    where the row's sealed state is read from before the app writes over it.
    Append-only, so nobody can take a later seal back and replay an earlier
    state; a seal inserted by hand names a log row that does not write the
    row, and verify_trail names it."""

    label = models.CharField(max_length=64)
    key = models.CharField(max_length=128)
    log_id = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["label", "key", "log_id"],
                                name="seal_latest")]

    def __str__(self) -> str:
        return f"{self.label} {self.key} sealed by {self.log_id}"


class BenchRow(models.Model):
    """Rows of the bench-only bare endpoint (casino/bench.py): a yardstick
    kept out of the audit trail, so a bench database's trail still verifies."""

    at = models.DateTimeField()
    note = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return f"bench row {self.pk}"


class ApiToken(AbstractAuthToken):
    """A tablet's API token (django-rest-knox's model, KNOX_TOKEN_MODEL): one
    per sign-in, so per device. The database keeps only a SHA-512 digest of
    the token and its first 15 characters (the lookup key), never the token:
    whoever reads the table cannot send any of it back as a token.

    `password_mark` ties the token to the password it was issued under
    (casino/tokenauth.py): a password changed by any path, even an UPDATE
    that bypasses Django's signals, refuses the token at its next request."""

    device = models.CharField(max_length=200, blank=True)
    password_mark = models.CharField(max_length=64)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token {self.token_key}… of {self.user} ({self.device or '?'})"


class AnchorRecord(AppendOnlyModel):
    """An anchor as written to TRAIL_ANCHOR_DIR (casino/anchors.py), kept in
    the database too: what the timestamp retry works from, and what
    verify_trail expects a file for. The signature (casino/signing.py) is
    over the anchor's statement (row, link, hash, at, reason); a row forged
    here has no valid signature and no file."""

    row = models.BigIntegerField()
    link = models.CharField(max_length=64, blank=True)
    hash = models.CharField(max_length=64)
    at = models.DateTimeField(db_index=True)
    reason = models.TextField(blank=True)
    signature = models.CharField(max_length=100, blank=True)
    signing_key_id = models.CharField(max_length=16, blank=True)
    file = models.CharField(max_length=200)
    # The keyed chain was checked from the row after this one up to `row`
    # before the anchor was signed (casino/chain_check.py); null: an anchor
    # signed before that check existed.
    checked_from = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"anchor of row {self.row} at {self.at:%Y-%m-%d %H:%M}"


class TimestampToken(AppendOnlyModel):
    """An RFC 3161 trusted timestamp of an anchor's statement
    (casino/timestamps.py), added when the authority answers (at once, or at
    a later retry). `token`: the base64 of the DER TimeStampToken, checked
    (the authority's signature, the imprint) when it was received."""

    anchor = models.ForeignKey(AnchorRecord, on_delete=models.PROTECT,
                               related_name="tokens")
    token = models.TextField()
    gen_time = models.DateTimeField()
    serial = models.CharField(max_length=64)
    authority = models.CharField(max_length=500, blank=True)
    received_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"timestamp of anchor {self.anchor_id} at {self.gen_time}"


class TreeNode(AppendOnlyModel):
    """A complete subtree of the trail's Merkle tree (casino/merkle.py): the
    hash (hex) over leaves [index * 2**level, (index + 1) * 2**level). Level
    0 holds the leaves, the change-log rows' public links in id order, with
    their row. What makes a checkpoint, an inclusion or a consistency proof
    cost O(log n) look-ups; a forged node gives a proof the witnesses' and
    the verifier's checks refuse."""

    epoch = models.PositiveIntegerField(default=1)
    level = models.SmallIntegerField()
    index = models.BigIntegerField()
    hash = models.CharField(max_length=64)
    row = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["epoch", "level", "index"],
                                               name="treenode_position")]
        indexes = [models.Index(fields=["row"], name="treenode_row")]

    def __str__(self) -> str:
        return f"tree node {self.level}/{self.index}"


class Checkpoint(AppendOnlyModel):
    """A signed tree head of the trail (c2sp.org/tlog-checkpoint), as
    published: `note` is the signed note (the log's Ed25519 signature,
    TRAIL_SIGNING_KEY). `head_row`: the change-log row of its last leaf;
    `epoch`: which log (a declared loss starts the next, casino/epochs.py)."""

    epoch = models.PositiveIntegerField(default=1)
    size = models.BigIntegerField()
    root = models.CharField(max_length=64)
    head_row = models.BigIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    note = models.TextField()

    class Meta:
        ordering = ["id"]
        # the evidence bundle's look-ups: the checkpoints of a window's leaves
        # (audit/evidence/witnessed.py)
        indexes = [models.Index(fields=["epoch", "size"], name="checkpoint_size")]

    def __str__(self) -> str:
        return f"checkpoint {self.size} at {self.at:%H:%M:%S}"


class Cosignature(AppendOnlyModel):
    """A witness's cosignature/v1 of a checkpoint (c2sp.org/tlog-cosignature),
    checked against its configured key when received."""

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT,
                                   related_name="cosignatures")
    witness = models.CharField(max_length=200)
    line = models.TextField()
    time = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.witness} cosigned {self.checkpoint_id}"


class WitnessEvent(AppendOnlyModel):
    """What the witnesses and the checkpoint maker found: `fork` (the
    database's chain does not extend what a witness cosigned, or a witness
    refused a proof), `behind` (a witness holds a larger tree than the
    database: a restored dump, a cut tail), `epoch` (the operator's
    declaration of a loss, which lifts the stop on writes). While a `fork` or
    `behind` is newer than the last `epoch`, the chain refuses writes
    (casino_chain_head, migration casino 0016)."""

    kind = models.CharField(max_length=16)
    witness = models.CharField(max_length=200, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    detail = models.TextField()
    request = models.TextField(blank=True)  # a refused request, as evidence
    # an `epoch`: its number and its first change-log row (the declaration)
    epoch = models.PositiveIntegerField(null=True, blank=True)
    row = models.BigIntegerField(null=True, blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.witness} at {self.at:%H:%M:%S}"
