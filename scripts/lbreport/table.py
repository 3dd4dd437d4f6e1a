"""Tables written twice: Markdown for people, CSV (raw numbers, no units in cells) for tools."""

from __future__ import annotations

import csv
import io
import math


def fmt_time(us):
    if us is None:
        return "—"
    if us < 1000:
        return f"{us:.3g} µs" if us < 100 else f"{us:.0f} µs"
    if us < 1e6:
        return f"{us / 1e3:.3g} ms"
    return f"{us / 1e6:.3g} s"


def fmt_mb(b):
    """Bytes as MB (10^6 bytes, as layerbench analyze prints them)."""
    if b is None:
        return "—"
    mb = b / 1e6
    if mb == 0:
        return "0"
    if abs(mb) < 0.01:
        return f"{mb:.4f}"
    return f"{mb:.3g}" if abs(mb) < 100 else f"{mb:,.0f}"


def fmt_num(v, digits=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fmt_pct(v, signed=False):
    if v is None:
        return "—"
    s = f"{v:+.1f} %" if signed else f"{v:.1f} %"
    return s.replace("-", "−")


def fmt_ratio(v):
    return "—" if v is None else f"{v:.2f}×"


class Table:
    """columns: list of (header, csv_header); rows of (display cells, raw values)."""

    def __init__(self, columns, right=None):
        self.headers = [c[0] for c in columns]
        self.csv_headers = [c[1] for c in columns]
        self.right = right or [False] * len(columns)
        self.rows: list[list[str]] = []
        self.raw: list[list] = []

    def add(self, cells, raw=None):
        assert len(cells) == len(self.headers), (cells, self.headers)
        self.rows.append([str(c) for c in cells])
        self.raw.append(list(raw) if raw is not None else list(cells))

    def __len__(self):
        return len(self.rows)

    def markdown(self) -> str:
        def esc(s):
            return s.replace("|", "\\|").replace("\n", " ")

        out = ["| " + " | ".join(esc(h) for h in self.headers) + " |",
               "|" + "|".join("---:" if r else "---" for r in self.right) + "|"]
        for row in self.rows:
            out.append("| " + " | ".join(esc(c) for c in row) + " |")
        return "\n".join(out) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.csv_headers)
        for row in self.raw:
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in row])
        return buf.getvalue()
