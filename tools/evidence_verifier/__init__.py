"""The standalone verifier of an evidence bundle, in parts: run it as
`python tools/verify_evidence.py` (its docstring says what it checks). Only
the standard library and `cryptography`; never Django."""
