"""What the interleaved A/B scripts (ab.py, rules_ab.py) share: a copy of the sample project,
one timed call that must be allowed, the interleaving of sides, and the p50/p99 summary.

Timing itself is bench/run.py's (`timed`: spawn, payload on stdin, answer read, reaped).
Standard library only.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Iterable

import run as bench


def sample_copy(root: Path, name: str) -> Path:
    """A fresh copy of the sample project under `root`, without its `.attenu/`."""
    dst = root / name
    shutil.copytree(bench.SAMPLE, dst, ignore=shutil.ignore_patterns(".attenu"))
    return dst


def allowed_call(binary: str, proj: str, payload: dict) -> float:
    """One hook process answering `payload` in `proj`, in ms; anything but an allow stops the run."""
    ms, code, out, err = bench.timed([binary], bench.enc(payload), {**os.environ, "CLAUDE_PROJECT_DIR": proj})
    if code != 0 or not bench.is_allow(out):
        raise SystemExit(f"{binary}: unexpected answer {code} {out!r} {err!r}")
    return ms


def percentile(ms: list[float], q: float) -> float:
    s = sorted(ms)
    return s[min(len(s) - 1, int(q * len(s)))]


def p50_p99(ms: list[float]) -> dict:
    return {"p50": round(percentile(ms, 0.5), 3), "p99": round(percentile(ms, 0.99), 3)}


def interleaved(rounds: int, sides: list, each: Callable[[int, object], None]) -> None:
    """Calls `each(round, side)` for every side in every round, the order reversed on odd
    rounds, so both sides see the same machine drift."""
    for i in range(rounds):
        order: Iterable = reversed(sides) if i % 2 else sides
        for side in order:
            each(i, side)
