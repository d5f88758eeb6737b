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
