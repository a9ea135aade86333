"""Verifies one bundle with the reference implementation, attenu_guard.evidence.verify_bundle,
holding only the anchor public key. Prints the reference report's verdict as JSON."""
import json
import sys

from attenu_guard import evidence
from cryptography.hazmat.primitives.asymmetric import ed25519


class PublicKeyOnly:
    """A verifier that holds only the public half: it can check the anchor, never sign."""

    def __init__(self, public_hex, kid):
        self.kid = kid
        self._key = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex))

    def sign(self, _data):
        raise RuntimeError("a reviewer holds no private key")

    def verify(self, data, sig, key_id=None):
        try:
            self._key.verify(sig, data)
            return True
        except Exception:
            return False


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        bundle = json.load(f)
    with open(sys.argv[2], encoding="utf-8") as f:
        pub = json.load(f)
    report = evidence.verify_bundle(bundle, PublicKeyOnly(pub["public_key"], pub.get("kid")))
    eb = report.get("execution_binding") or {}
    print(json.dumps({
        "ok": report["ok"],
        "checks": report["checks"],
        "failures": report["failures"],
        "execution_binding": eb.get("aggregate", eb.get("status")),
        "ungated": report["ungated"],
        "actions_checked": report["actions_checked"],
        "entries": len(bundle.get("entries") or []),
    }))


if __name__ == "__main__":
    main()
