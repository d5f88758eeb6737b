"""tools/evidence_verifier/tlog.py against the specs' own examples (RFC 6962's
test tree as certificate-transparency and Go's tlog test it, the Go
signed-note reference note, the tlog-cosignature example) and against
RFC 6962's definitions (hypothesis). No database."""

from __future__ import annotations

import base64
import hashlib
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.evidence_verifier import tlog

h = bytes.fromhex
# RFC 6962's test tree: the leaves' data and the root at each size 1..8.
LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657",
          "606162636465666768696a6b6c6d6e6f"]
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION_5_OF_8 = ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]
CONSISTENCY_6_TO_8 = [
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]
CONSISTENCY_2_TO_5 = [
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]
# golang.org/x/mod/sumdb/note's reference key and note.
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SKEY_SEED = "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"  # 0x01 || seed
GO_TEXT = ("If you think cryptography is the answer to your problem,\n"
           "then you don't know what your problem is.\n")
GO_SIG = ("\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1"
          "FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")


def tree(n: int) -> tlog.MemoryTree:
    return tlog.MemoryTree([tlog.leaf_hash(h(x)) for x in LEAVES[:n]])


def test_roots_of_the_rfc_tree():
    assert tlog.MemoryTree().root() == h(
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    for n in range(1, 9):
        assert tree(n).root() == h(ROOTS[n - 1]), n


def test_inclusion_vectors():
    t = tree(8)
    proof = [h(x) for x in INCLUSION_5_OF_8]
    assert tlog.inclusion_proof(t.get, 5, 8) == proof
    tlog.verify_inclusion(5, 8, tlog.leaf_hash(h(LEAVES[5])), proof, h(ROOTS[7]))
    with pytest.raises(tlog.ProofError):
        tlog.verify_inclusion(4, 8, tlog.leaf_hash(h(LEAVES[5])), proof, h(ROOTS[7]))
    tlog.verify_inclusion(2, 3, tlog.leaf_hash(h(LEAVES[2])), [h(ROOTS[1])],
                          h(ROOTS[2]))


def test_consistency_vectors():
    t = tree(8)
    proof = [h(x) for x in CONSISTENCY_6_TO_8]
    assert tlog.consistency_proof(t.get, 6, 8) == proof
    tlog.verify_consistency(6, 8, proof, h(ROOTS[5]), h(ROOTS[7]))
    with pytest.raises(tlog.ProofError):
        tlog.verify_consistency(6, 8, proof, h(ROOTS[4]), h(ROOTS[7]))
    proof = [h(x) for x in CONSISTENCY_2_TO_5]
    assert tlog.consistency_proof(tree(5).get, 2, 5) == proof
    tlog.verify_consistency(2, 5, proof, h(ROOTS[1]), h(ROOTS[4]))


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962's MTH, straight from its definition."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return tlog.leaf_hash(leaves[0])
    k = tlog.split(len(leaves))
    return tlog.node_hash(_mth(leaves[:k]), _mth(leaves[k:]))


sizes = st.integers(min_value=1, max_value=70)


@settings(max_examples=150, deadline=None)
@given(n=sizes, data=st.data())
def test_inclusion_property(n, data):
    leaves = [i.to_bytes(4, "big") for i in range(n)]
    t = tlog.MemoryTree([tlog.leaf_hash(x) for x in leaves])
    root = t.root()
    assert root == _mth(leaves)
    m = data.draw(st.integers(min_value=0, max_value=n - 1))
    proof = tlog.inclusion_proof(t.get, m, n)
    tlog.verify_inclusion(m, n, tlog.leaf_hash(leaves[m]), proof, root)
    # any other leaf, index, size or a changed hash is refused
    with pytest.raises(tlog.ProofError):
        tlog.verify_inclusion(m, n, tlog.leaf_hash(b"other"), proof, root)
    if n > 1:
        with pytest.raises(tlog.ProofError):
            tlog.verify_inclusion((m + 1) % n, n, tlog.leaf_hash(leaves[m]), proof,
                                  root)
    if proof:
        bad = list(proof)
        bad[-1] = bytes(32)
        with pytest.raises(tlog.ProofError):
            tlog.verify_inclusion(m, n, tlog.leaf_hash(leaves[m]), bad, root)
        with pytest.raises(tlog.ProofError):
            tlog.verify_inclusion(m, n, tlog.leaf_hash(leaves[m]), proof[:-1], root)


@settings(max_examples=150, deadline=None)
@given(n=sizes, data=st.data())
def test_a_window_of_leaves_gives_the_root(n, data):
    """What the evidence verifier does (tools/evidence_verifier/witnessed.py):
    the right edge left of a window, its leaves one by one, the subtrees
    right of it give the root of any larger tree; a leaf changed does not."""
    leaves = [tlog.leaf_hash(i.to_bytes(4, "big")) for i in range(n)]
    t = tlog.MemoryTree(leaves)
    lo = data.draw(st.integers(min_value=0, max_value=n))
    hi = data.draw(st.integers(min_value=lo, max_value=n))
    size = data.draw(st.integers(min_value=hi, max_value=n))
    assert len(tlog.subtrees(0, size)) == size.bit_count()
    window = tlog.CompactRange(lo, [t.get(*p) for p in tlog.subtrees(0, lo)])
    for leaf in leaves[lo:hi]:
        window.leaf(leaf)
    assert window.size == hi and window.root() == t.root(hi)
    for level, index in tlog.subtrees(hi, size):
        window.subtree(level, t.get(level, index))
    assert window.size == size and window.root() == t.root(size)
    if hi > lo:
        forged = tlog.CompactRange(lo, [t.get(*p) for p in tlog.subtrees(0, lo)])
        for leaf in [tlog.leaf_hash(b"forged"), *leaves[lo + 1:hi]]:
            forged.leaf(leaf)
        assert forged.root() != t.root(hi)
    with pytest.raises(tlog.ProofError):
        tlog.CompactRange(lo, [bytes(32)] * (lo.bit_count() + 1))
    if hi % 2:
        with pytest.raises(tlog.ProofError):  # not aligned
            tlog.CompactRange(hi, [t.get(*p) for p in tlog.subtrees(0, hi)]).subtree(
                1, bytes(32))


@settings(max_examples=150, deadline=None)
@given(n=sizes, data=st.data())
def test_consistency_property(n, data):
    leaves = [tlog.leaf_hash(i.to_bytes(4, "big")) for i in range(n)]
    t = tlog.MemoryTree(leaves)
    m = data.draw(st.integers(min_value=1, max_value=n))
    proof = tlog.consistency_proof(t.get, m, n)
    assert len(proof) <= 2 * n.bit_length()
    tlog.verify_consistency(m, n, proof, t.root(m), t.root())
    # a fork: the same size with one leaf changed is refused
    forked = list(leaves)
    i = data.draw(st.integers(min_value=0, max_value=m - 1))
    forked[i] = tlog.leaf_hash(b"forged")
    f = tlog.MemoryTree(forked)
    if m < n:
        with pytest.raises(tlog.ProofError):
            tlog.verify_consistency(m, n, tlog.consistency_proof(f.get, m, n),
                                    t.root(m), f.root())
        with pytest.raises(tlog.ProofError):
            tlog.verify_consistency(m, n, proof, t.root(m), f.root())
    with pytest.raises(tlog.ProofError):
        tlog.verify_consistency(m, m, [], t.root(m), f.root(m))


def test_go_reference_note():
    v = tlog.parse_vkey(GO_VKEY)
    assert v.name == "PeterNeumann" and v.key_id.hex() == "c74f20a3"
    seed = base64.b64decode(GO_SKEY_SEED)[1:]
    key = Ed25519PrivateKey.from_private_bytes(seed)
    assert tlog.public_raw(key.public_key()) == v.public
    # Ed25519 is deterministic: the same bytes as Go's note.Sign
    assert tlog.note_sign(GO_TEXT, "PeterNeumann", key) == GO_SIG
    assert tlog.vkey("PeterNeumann", v.public) == GO_VKEY
    text, names = tlog.note_open(GO_TEXT + "\n" + GO_SIG, [v])
    assert text == GO_TEXT and names == ["PeterNeumann"]
    with pytest.raises(tlog.ProofError):
        tlog.note_open(GO_TEXT.replace("problem", "Problem") + "\n" + GO_SIG, [v])
    other = tlog.Verifier("Someone", 1, bytes(32))
    with pytest.raises(tlog.ProofError, match="no signature of a known key"):
        tlog.note_open(GO_TEXT + "\n" + GO_SIG, [other])
    for bad in ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
                "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T",
                "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"):
        with pytest.raises(tlog.ProofError):
            tlog.parse_vkey(bad)


def test_checkpoint_example_of_the_spec():
    text = ("example.com/behind-the-sofa\n20852163\n"
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")
    cp = tlog.checkpoint_parse(text)
    assert (cp.origin, cp.size) == ("example.com/behind-the-sofa", 20852163)
    assert cp.text() == text
    for bad in ("o\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                "o\n1\nCsUY\n", "o\n1\n",
                "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="):
        with pytest.raises(tlog.ProofError):
            tlog.checkpoint_parse(bad)


def test_cosignature_example_of_the_spec():
    """The tlog-cosignature example line: key ID, then the 8-byte time the
    example's signed message states (1679315147), then 64 bytes."""
    line = ("\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXc"
            "rtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n")
    (sig,) = tlog.parse_signature_lines(line)
    assert len(sig.signature) == 72
    assert struct.unpack(">Q", sig.signature[:8])[0] == 1679315147
    assert tlog.cosigned_message("example.com/behind-the-sofa\n20852163\n"
                                 "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                                 1679315147) == (
        b"cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\n"
        b"CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")


def test_cosign_and_check():
    key = Ed25519PrivateKey.generate()
    pub = tlog.public_raw(key.public_key())
    text = tlog.Checkpoint("casino.example/trail", 3, bytes(range(32))).text()
    line = tlog.cosign(text, "w1.example", key, 1700000000)
    v = tlog.parse_vkey(tlog.vkey("w1.example", pub, tlog.ALG_COSIGNATURE_V1))
    assert v.key_id == hashlib.sha256(b"w1.example\n\x04" + pub).digest()[:4]
    (sig,) = tlog.parse_signature_lines(line)
    assert tlog.cosignature_check(text, sig, v) == 1700000000
    with pytest.raises(tlog.ProofError):
        tlog.cosignature_check(text.replace("3", "4", 1), sig, v)
    forged = tlog.Signature(sig.name, sig.key_id,
                            struct.pack(">Q", 1700000001) + sig.signature[8:])
    with pytest.raises(tlog.ProofError):
        tlog.cosignature_check(text, forged, v)


def test_add_checkpoint_body_round_trip():
    note = "o\n1\n" + tlog.b64(bytes(32)) + "\n\n\u2014 o AAAAAAAA\n"
    body = tlog.add_checkpoint_body(5, [bytes(32), b"\x01" * 32], note)
    assert body.startswith(b"old 5\nAAAA")
    assert tlog.add_checkpoint_parse(body) == (5, [bytes(32), b"\x01" * 32], note)
    assert tlog.add_checkpoint_parse(b"old 0\n\n" + note.encode()) == (0, [], note)
    for bad in (b"old 05\n\n", b"new 5\n\n", b"old 5\nAAAA\n\n", b"old 5\n"):
        with pytest.raises(tlog.ProofError):
            tlog.add_checkpoint_parse(bad + note.encode())
