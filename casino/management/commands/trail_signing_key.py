"""The Ed25519 key that signs anchors and report stamps (casino/signing.py):
show the one in force, or make a new one."""

from __future__ import annotations

import base64
import os

from django.core.management.base import BaseCommand

from casino.signing import KEYS_URL, key_id, public_keys, public_of


class Command(BaseCommand):
    help = (
        "Print the public signing keys (the current one, then the retired ones) "
        "with their key ids (fingerprints), as /trail/keys.json serves them. "
        "--new prints a new private key for TRAIL_SIGNING_KEY (keep it out of "
        "the database and of version control) and its key id."
    )

    def add_arguments(self, parser):
        parser.add_argument("--new", action="store_true",
                            help="make a new private key and print it")

    def handle(self, *args, new: bool = False, **options):
        if new:
            seed = os.urandom(32)
            public = public_of(seed)
            self.stdout.write(
                f"TRAIL_SIGNING_KEY={base64.b64encode(seed).decode()}\n"
                f"key id (fingerprint): {key_id(public)}\n"
                f"public key (base64): {base64.b64encode(public).decode()}"
            )
            return
        for n, key in enumerate(public_keys()):
            state = "current" if n == 0 else "retired"
            dates = f"from {key.start or '...'} until {key.until or '...'}"
            self.stdout.write(
                f"{state} key {key.id} ({dates})\n"
                f"  public key (base64): {base64.b64encode(key.raw).decode()}"
            )
        self.stdout.write(f"served at {KEYS_URL}")
