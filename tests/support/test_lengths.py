#!/usr/bin/env python3
"""The length of the integration tests: the median (and spread) over tests/*.rs.

A test is a function of a file directly under tests/ that carries `#[test]` or is named in
that file's `tests![...]` list (tests/common/harness.rs). Its length is counted as
tests/architecture.rs counts a function: from the `fn` line to the closing brace at the same
indentation, both included. `code` leaves out blank lines and `//` comment lines.

    python3 tests/support/test_lengths.py [--list] [--longest N]

Standard library only; reads files, runs nothing.
"""

import re
import statistics
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)")
LIST = re.compile(r"tests!\[(.*?)\]", re.S)


def functions(lines):
    """Each function: (name, first line, total lines, code lines, whether #[test] is on it)."""
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        close = m.group(1) + "}"
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == close), None)
        if end is None:
            continue
        # Attributes directly above (#[test], #[ignore], doc comments between them).
        k, marked = i - 1, False
        while k >= 0 and lines[k].strip().startswith(("#[", "///")):
            marked |= lines[k].strip() == "#[test]"
            k -= 1
        body = lines[i : end + 1]
        code = [l for l in body if l.strip() and not l.strip().startswith("//")]
        out.append((m.group(2), i + 1, len(body), len(code), marked))
    return out


def tests():
    """Every test of tests/*.rs: (file, name, line, total, code)."""
    found = []
    for path in sorted(TESTS.glob("*.rs")):
        text = path.read_text()
        listed = {n.strip() for m in LIST.finditer(text) for n in m.group(1).split(",")}
        for name, line, total, code, marked in functions(text.splitlines()):
            if marked or name in listed:
                found.append((path.name, name, line, total, code))
    return found


def main(argv):
    found = tests()
    if not found:
        sys.exit("no tests found under " + str(TESTS))
    if "--list" in argv:
        for f, name, line, total, code in found:
            print(f"{total:4} {code:4}  tests/{f}:{line} {name}")
    if "--longest" in argv:
        n = int(argv[argv.index("--longest") + 1])
        for f, name, line, total, code in sorted(found, key=lambda t: -t[3])[:n]:
            print(f"{total:4}  tests/{f}:{line} {name}")
    for what, i in (("lines", 3), ("code", 4)):
        xs = sorted(t[i] for t in found)
        q = statistics.quantiles(xs, n=4)
        print(
            f"{what}: {len(xs)} tests in {len({t[0] for t in found})} files; median {statistics.median(xs)}, "
            f"quartiles {q[0]}/{q[2]}, max {xs[-1]}, {sum(x <= 15 for x in xs)} of {len(xs)} at 15 or under"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
