"""A transparency-log witness (c2sp.org/tlog-witness) a regulator runs
beside the verifier: `python -m tools.witness --help`. Only the standard
library and `cryptography`; never Django."""
