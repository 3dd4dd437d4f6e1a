"""Reading layerbench results: Google Benchmark JSON (`layerbench run --out FILE.json`) and
the per-case stream FILE.jsonl that a run appends to as cases finish (all that an interrupted
run leaves).

A file that cannot be read is one `LoadError` whose message names the file and what is wrong;
callers report it and go on with the other files. Nothing here knows a list of kernels,
backends or dtypes: identity comes from each run object's lb_* fields (or, for plain Google
Benchmark output, from its name `<kernel id>/<dtype>/<problem>/threads:N`).

Two shapes of layerbench file are read (docs/results-format.md): format 2
(`layerbench_format_version` "2" in the context) keeps only measured cases in "benchmarks" and
lists the others (unsupported, out of memory, failed, not run) in a top-level
"layerbench_not_measured"; older files put those in "benchmarks" as error entries with time 0.
A file may be gzipped (`.json.gz`, as nightly history is kept). Every run belongs to a machine:
`layerbench_machine` where the file has it, else host name + a short hash of the CPU model and
core count (so two hosts both called `vm` stay apart).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field

GPU_BACKENDS = ("cuda", "cublas", "cudnn")  # only for files without lb_device (plain GB output)
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
ERROR_STATUSES = ("failed", "unsupported", "out_of_memory", "not_run")
# A plain Google Benchmark file says nothing of verification: its cases are "unknown", measured
# but not known to be right (never "passed").
MEASURED_STATUSES = ("passed", "mistrusted", "unknown")


class LoadError(Exception):
    """One line: '<file>: what is wrong'."""


def _number(v):
    """A finite float, or None (Google Benchmark's NaN became null; strings are not numbers)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def parse_problem(line: str) -> tuple[str, dict[str, str]]:
    """'conv2d mb=1 ic=3 ... name=conv1' -> ('conv2d', {'mb': '1', 'ic': '3', ..., 'name': 'conv1'})."""
    words = (line or "").split()
    if not words:
        return "", {}
    keys = {}
    for w in words[1:]:
        k, _, v = w.partition("=")
        keys[k] = v
    return words[0], keys


def print_problem(op: str, keys: dict[str, str]) -> str:
    return " ".join([op] + [f"{k}={v}" for k, v in keys.items()])


def problem_without(line: str, *drop: str) -> str:
    """The problem line with some keys left out: the key that pairs cases across one axis."""
    op, keys = parse_problem(line)
    return print_problem(op, {k: v for k, v in keys.items() if k not in drop})


def _int(v, default=None):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _rep_time_us(row: dict) -> float | None:
    """A repetition's time per run() in microseconds (None where missing or NaN)."""
    t = _number(row.get("real_time"))
    return None if t is None else t * TIME_UNITS_US.get(row.get("time_unit", "ns"), 1.0)


@dataclass
class Case:
    """One case (problem x kernel x threads) of one results file, with its repetitions."""

    source: str
    name: str  # lb_case: '<kernel>/<dtype>/<problem>/threads:N'
    kernel: str = ""
    backend: str = ""
    device: str = ""
    op: str = ""
    type: str = ""
    dtype: str = ""
    relu: str = ""
    problem: str = ""  # canonical problem line (lb_problem, else the label)
    layer: str = ""
    threads: int = 1
    cache: str = "hot"
    blocking_sync: int | None = None
    status: str = ""
    reason: str = ""
    details: str = ""
    noisy: bool = False
    cv: float | None = None
    reps: list[dict] = field(default_factory=list)  # successful iteration rows
    machine_name: str = ""  # the run's machine (Run.machine)
    nan_reps: int = 0  # repetitions whose time is NaN or missing: counted, left out of medians
    repro: str = ""
    aggregates: dict[str, dict] = field(default_factory=dict)  # aggregate_name -> row
    error_message: str = ""

    @property
    def key(self) -> tuple:
        """What makes a case the same case in another file."""
        return (self.name, self.cache, self.blocking_sync)

    @property
    def label(self) -> str:
        """The case as people read it: its name, which says "-cold" and "-sync_blocking" itself."""
        return self.name

    @property
    def ok(self) -> bool:
        """Measured: passed, mistrusted or (foreign file) unknown, with a time."""
        return self.status in MEASURED_STATUSES and self.time_us is not None

    @property
    def error(self) -> bool:
        return not self.ok

    @property
    def keys(self) -> dict[str, str]:
        return parse_problem(self.problem)[1]

    @property
    def pass_name(self) -> str:
        """The pass (dir=, problem.h): fwd unless the problem line names another."""
        return self.keys.get("dir", "fwd")

    @property
    def batch(self) -> int | None:
        b = self.value("lb_batch")
        if b:
            return int(round(b))
        return _int(self.keys.get("mb"))

    def times_us(self) -> list[float]:
        return [t for t in map(_rep_time_us, self.reps) if t is not None]

    @property
    def time_us(self) -> float | None:
        """Median time per run() over the repetitions, in microseconds."""
        ts = self.times_us()
        if ts:
            return statistics.median(ts)
        for agg in ("median", "mean"):
            r = self.aggregates.get(agg)
            if r is not None and _number(r.get("real_time")) is not None:
                return _number(r["real_time"]) * TIME_UNITS_US.get(r.get("time_unit", "ns"), 1.0)
        return None

    @property
    def host_wall_us(self) -> float | None:
        """Median host wall time per run() in microseconds (lb_host_wall_per_run_s: for a GPU
        case its launch and synchronisation included, which the device time leaves out); None
        where the file does not record it."""
        vs = self.values("lb_host_wall_per_run_s")
        return statistics.median(vs) * 1e6 if vs else None

    def fastest(self) -> tuple[float, dict] | None:
        """The fastest repetition: its time per run() in microseconds, and its row (whose
        counters, % of peak among them, are that repetition's); None without repetitions."""
        timed = [(t, r) for r in self.reps if (t := _rep_time_us(r)) is not None]
        return min(timed, key=lambda tr: tr[0]) if timed else None

    def value_in(self, row: dict, key: str) -> float | None:
        """A counter's value in one repetition's row (None where absent or NaN)."""
        return _number(row.get(key))

    def values(self, key: str) -> list[float]:
        """A counter's value in every repetition (None where absent or NaN left out)."""
        out = [_number(r.get(key)) for r in self.reps]
        return [v for v in out if v is not None]

    def value(self, key: str) -> float | None:
        """A counter's median over the repetitions (else the median or mean aggregate's)."""
        vs = self.values(key)
        if vs:
            return statistics.median(vs)
        for agg in ("median", "mean"):
            r = self.aggregates.get(agg)
            if r is not None and _number(r.get(key)) is not None:
                return _number(r[key])
        return None

    @property
    def flops(self) -> float | None:
        """FLOPs of one run(), as lb_flop_per_s counts them: 2 x the model's MACs on the
        input (a convolution's taps over its zero padding left out); files written before
        lb_pred_macs_on_input counted every product."""
        macs = self.value("lb_pred_macs_on_input")
        if macs is None:
            macs = self.value("lb_pred_macs")
        return 2 * macs if macs is not None else None

    @property
    def gflops(self) -> float | None:
        v = self.value("lb_flop_per_s")
        return v / 1e9 if v is not None else None

    @property
    def device_peak(self) -> float | None:
        return self.value("lb_device_peak_bytes")

    @property
    def host_peak(self) -> float | None:
        return self.value("lb_host_peak_bytes")


@dataclass
class Peak:
    device: str  # "cpu" | "gpu"
    kind: str  # f32_fma, bf16_dot, f32_gemm, d2d_copy, ...
    threads: int | None
    per_second: float  # FLOP/s, OP/s or bytes/s
    unit: str  # "FLOP/s", "OP/s", "B/s"
    how: str


_PEAK_RE = re.compile(r"^\s*([0-9.eE+-]+)\s*([kMGTP]?)(FLOP/s|OP/s|OPS|B/s)\s*(?:\((.*)\))?\s*$")
_PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def parse_peak(text: str) -> tuple[float, str, str] | None:
    """'259.2 GFLOP/s (AVX-512 ...)' -> (259.2e9, 'FLOP/s', 'AVX-512 ...'); None if not that shape."""
    m = _PEAK_RE.match(str(text))
    if not m:
        return None
    try:
        v = float(m.group(1)) * _PREFIX[m.group(2)]
    except ValueError:
        return None
    unit = "OP/s" if m.group(3) in ("OP/s", "OPS") else m.group(3)
    return v, unit, m.group(4) or ""


@dataclass
class Run:
    """One results file."""

    path: str
    context: dict
    cases: dict[tuple, Case]
    warnings: list[str] = field(default_factory=list)
    rows: int = 0

    @property
    def name(self) -> str:
        base = os.path.basename(self.path)
        for ext in (".jsonl", ".json.gz", ".json"):
            if base.endswith(ext):
                return base[: -len(ext)]
        return base

    @property
    def date(self) -> str:
        return str(self.context.get("date", ""))

    @property
    def host(self) -> str:
        return str(self.context.get("layerbench_host") or self.context.get("host_name") or "?")

    @property
    def cpu_model(self) -> str:
        return str(self.context.get("layerbench_cpu_model", ""))

    @property
    def cpu_signature(self) -> str:
        """The CPU's vendor, family, model and stepping ("" in files from before it): what tells
        apart two CPUs that share a model name."""
        return str(self.context.get("layerbench_cpu_signature", ""))

    @property
    def gpu_model(self) -> str:
        """The GPU the run had; "" where it had none (layerbench writes "none (why)" then)."""
        m = str(self.context.get("layerbench_gpu_model", ""))
        return "" if m.startswith("none") else m

    @property
    def commit(self) -> str:
        return str(self.context.get("layerbench_git_commit", ""))

    @property
    def format_version(self) -> int:
        """2 from the format that lists unmeasured cases beside "benchmarks"; 1 before it."""
        return _int(self.context.get("layerbench_format_version"), 1) or 1

    @property
    def machine(self) -> str:
        return machine_of(self.context)

    @property
    def machine_id(self) -> str:
        return str(self.context.get("layerbench_machine_id") or machine_of(self.context))

    @property
    def load_avg(self) -> float | None:
        """The 1-minute load average when the run started (Google Benchmark's context)."""
        la = self.context.get("load_avg")
        return _number(la[0]) if isinstance(la, list) and la else None

    @property
    def num_cpus(self) -> int | None:
        return _int(self.context.get("num_cpus"))

    def busy(self, max_load_per_core: float = 0.5) -> str:
        """Why the machine was busy at the start ("" when it was not): other work running while
        a benchmark starts moves its numbers more than any kernel change."""
        la, n = self.load_avg, self.num_cpus
        if la is None or not n:
            return ""
        if la > max_load_per_core * n:
            return f"load average {la:.2f} at the start on {n} cores (more than {max_load_per_core:g} per core)"
        return ""

    @property
    def shuffled(self) -> bool:
        """Whether each case's repetitions were shuffled among the other cases' (`layerbench run
        --benchmark_enable_random_interleaving`): then they are spread over the run, not taken
        back to back (files without the key did not shuffle)."""
        return self.context.get("layerbench_repetitions_shuffled") == "true"

    @property
    def steadiness(self) -> dict | None:
        """`layerbench run --steadiness`'s probe of the machine over the run (a dict with
        windows, fma_spread, fma_slowest, fma_fastest, clock_spread, method), or None."""
        v = self.context.get("layerbench_steadiness")
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                return None
        if not isinstance(v, dict) or not all(isinstance(v.get(k), (int, float)) for k in ("windows", "fma_spread",
                                                                                           "clock_spread")):
            return None
        return v if v["windows"] > 0 else None

    def peaks(self) -> list[Peak]:
        structured = _structured_peaks(self.context.get("layerbench_peaks"))
        if structured is not None:
            return structured
        out = []
        for k, v in self.context.items():
            if not k.startswith("layerbench_peak_") or k == "layerbench_peaks_cache":
                continue
            parsed = parse_peak(v)
            if parsed is None:
                continue
            rest = k[len("layerbench_peak_"):]
            if rest.startswith("gpu_"):
                out.append(Peak("gpu", rest[4:], None, *parsed))
            else:
                m = re.match(r"^(.*)_threads(\d+)$", rest)
                if m:
                    out.append(Peak("cpu", m.group(1), int(m.group(2)), *parsed))
                else:
                    out.append(Peak("cpu", rest, None, *parsed))
        return out


def _structured_peaks(text) -> list[Peak] | None:
    """Format 2's `layerbench_peaks`: a JSON string (or list) of {"dtype", "engine", "threads",
    "device", "ops_per_second", "method"}. None when absent or unreadable (then the prose keys)."""
    if text is None:
        return None
    try:
        items = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return None
    if not isinstance(items, list):
        return None
    out = []
    for it in items:
        if not isinstance(it, dict) or _number(it.get("ops_per_second")) is None:
            continue
        dtype, engine = str(it.get("dtype", "")), str(it.get("engine", ""))
        unit = str(it.get("unit") or ("B/s" if "copy" in engine else "OP/s" if dtype == "i8" else "FLOP/s"))
        kind = str(it.get("kind") or f"{dtype}_{engine}".strip("_"))
        out.append(Peak(str(it.get("device", "cpu")), kind, _int(it.get("threads")), _number(it["ops_per_second"]),
                        unit, str(it.get("method", ""))))
    return out


def cpu_change(a: "Run", b: "Run") -> str:
    """Why two runs under one machine name ran on different CPUs ("" when they did not, or a
    file does not say): a VM's image keeps its machine id and model name ("AMD EPYC") when it
    moves to another host, so the name alone cannot promise the same CPU."""
    if a.cpu_signature and b.cpu_signature and a.cpu_signature != b.cpu_signature:
        return f"the CPU changed ({a.cpu_signature} -> {b.cpu_signature})"
    return ""


def short_hash(text: str, n: int = 6) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def machine_of(context: dict) -> str:
    """The machine a run's context names; for files from before `layerbench_machine`, the host
    name and a short hash of the CPU model and core count (host names alone repeat: `vm`)."""
    m = context.get("layerbench_machine")
    if isinstance(m, str) and m:
        return m
    host = str(context.get("host_name") or context.get("layerbench_host") or "host")
    cpu = str(context.get("layerbench_cpu_model", ""))
    return f"{host}-{short_hash(cpu + '/' + str(context.get('num_cpus', '')))}"


def _identity_from_name(name: str) -> dict:
    """For plain Google Benchmark output: '<kernel>/<dtype>/<problem>/threads:N/manual_time'."""
    parts = name.split("/")
    out = {"lb_kernel": parts[0]}
    if len(parts) > 1:
        out["lb_dtype"] = parts[1]
    for p in parts:
        if p.startswith("threads:"):
            out["lb_threads"] = _int(p[len("threads:"):], 1)
    pieces = parts[0].split(".")
    if len(pieces) >= 2:
        out["lb_op"] = pieces[0]
        out["lb_backend"] = pieces[1]
        out["lb_device"] = "gpu" if pieces[1] in GPU_BACKENDS else "cpu"
    return out


def _case_name(row: dict) -> str:
    if isinstance(row.get("lb_case"), str) and row["lb_case"]:
        return row["lb_case"]
    name = str(row.get("run_name") or row.get("name") or "")
    return re.sub(r"/(manual|real)_time(_\w+)?$", "", name)


def _type_of(op: str, keys: dict) -> str:
    if op == "conv2d":
        g, ic, oc = keys.get("g", "1"), keys.get("ic"), keys.get("oc")
        if g not in ("1", "") and g == ic == oc:
            return "depthwise"
        if keys.get("kh") == "1" and keys.get("kw", "1") == "1" and g in ("1", ""):
            return "pointwise"
        return "conv"
    return op


def _status_of(row: dict) -> str:
    s = row.get("lb_status")
    if isinstance(s, str) and s:
        return s
    if not row.get("error_occurred") and not any(k.startswith("lb_") for k in row):
        return "unknown"  # plain Google Benchmark: measured, nothing says it was verified
    if row.get("error_occurred"):
        msg = str(row.get("error_message", ""))
        for st in ("unsupported", "out of memory", "failed"):
            if msg.startswith(st):
                return st.replace(" ", "_")
        return "failed"
    return "passed"


def build_cases(path: str, rows: list[dict]) -> dict[tuple, Case]:
    cases: dict[tuple, Case] = {}
    seen: set[tuple] = set()
    for row in rows:
        name = _case_name(row)
        ident = _identity_from_name(name)
        ident.update({k: v for k, v in row.items() if k.startswith("lb_")})
        problem = ident.get("lb_problem") or row.get("label") or ""
        op, keys = parse_problem(problem)
        blocking = ident.get("lb_blocking_sync")
        blocking = int(blocking) if _number(blocking) is not None else None
        c = Case(source=path, name=name)
        c.cache = str(ident.get("lb_cache") or "hot")
        c.blocking_sync = blocking
        key = c.key
        if key not in cases:
            c.kernel = str(ident.get("lb_kernel", ""))
            c.backend = str(ident.get("lb_backend", ""))
            c.device = str(ident.get("lb_device", ""))
            c.op = str(ident.get("lb_op") or op)
            c.type = str(ident.get("lb_type") or _type_of(op, keys))
            c.dtype = str(ident.get("lb_dtype") or keys.get("dt", ""))
            c.relu = str(ident.get("lb_relu") or keys.get("relu", ""))
            c.problem = str(problem)
            c.layer = str(ident.get("lb_layer") or keys.get("name", ""))
            c.threads = _int(ident.get("lb_threads"), 1) or 1
            cases[key] = c
        c = cases[key]
        # A --resume or a merge can repeat a row; keep each (repetition, aggregate) once.
        dedupe = (key, row.get("repetition_index"), row.get("aggregate_name"), row.get("run_type"))
        if dedupe in seen:
            continue
        seen.add(dedupe)
        if not c.status:
            c.status = _status_of(row)
        c.reason = str(row.get("lb_reason") or c.reason or row.get("error_message") or "")
        c.details = str(row.get("lb_details") or c.details)
        c.noisy = c.noisy or bool(row.get("lb_noisy"))
        if _number(row.get("lb_cv")) is not None:
            c.cv = _number(row["lb_cv"])
        if row.get("error_occurred"):
            c.error_message = str(row.get("error_message", ""))
            if c.status in ("passed", "mistrusted"):
                c.status = _status_of({"error_occurred": True, "error_message": c.error_message})
            continue
        if row.get("run_type") == "aggregate":
            c.aggregates[str(row.get("aggregate_name", ""))] = row
        elif _number(row.get("real_time")) is None:
            c.nan_reps += 1  # NaN (or null) time: counted and reported, not silently dropped
        else:
            c.reps.append(row)
    for c in cases.values():
        if c.cv is None:
            ts = c.times_us()
            if len(ts) > 1 and statistics.mean(ts) > 0:
                # Google Benchmark's cv aggregate: the sample standard deviation over the mean.
                c.cv = statistics.stdev(ts) / statistics.mean(ts)
        if c.status in MEASURED_STATUSES and c.time_us is None:
            c.status = "failed"
            c.reason = c.reason or "no timed repetition in the file"
    return cases


def not_measured_cases(path: str, items) -> dict[tuple, Case]:
    """Format 2's "layerbench_not_measured": {"name", "kernel", "problem", "status", "reason",
    "repro"} per case that has no time (unsupported, out of memory, failed, not run)."""
    out: dict[tuple, Case] = {}
    if not isinstance(items, list):
        return out
    for it in items:
        if not isinstance(it, dict) or not it.get("name"):
            continue
        name = _case_name(it)  # lb_case, else the name without Google Benchmark's /manual_time
        ident = _identity_from_name(name)
        problem = str(it.get("problem", ""))
        op, keys = parse_problem(problem)
        kernel = str(it.get("kernel") or ident.get("lb_kernel", ""))
        pieces = kernel.split(".")
        c = Case(source=path, name=name, kernel=kernel, backend=pieces[1] if len(pieces) > 1 else "",
                 device=str(ident.get("lb_device", "")), op=op or ident.get("lb_op", ""),
                 type=_type_of(op, keys), dtype=keys.get("dt", ident.get("lb_dtype", "")),
                 relu=keys.get("relu", ""), problem=problem, layer=keys.get("name", ""),
                 threads=ident.get("lb_threads", 1) or 1, status=str(it.get("status") or "failed"),
                 reason=str(it.get("reason", "")), repro=str(it.get("repro", "")))
        c.cache = "cold" if "-cold" in name else "hot"
        c.blocking_sync = 1 if "sync_blocking" in name else None
        out.setdefault(c.key, c)
    return out


def _describe_json_error(text: str, e: json.JSONDecodeError) -> str:
    if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
        return f"truncated: the JSON ends at line {e.lineno} before it is complete"
    return f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"


def _check_rows(rows, where: str) -> None:
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise LoadError(f"{where}: benchmarks[{i}] is not an object")
        if not (r.get("name") or r.get("lb_case")):
            raise LoadError(f"{where}: benchmarks[{i}] has no 'name'")


def load(path: str) -> Run:
    """Reads one results file (.json or .jsonl). Raises LoadError (one line) when it cannot."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                text = f.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (EOFError, gzip.BadGzipFile) as e:
        raise LoadError(f"{path}: not a complete gzip file ({e})") from None
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise LoadError(f"{path}: not a text file ({e.reason} at byte {e.start})") from None
    if not text.strip():
        raise LoadError(f"{path}: empty file")
    warnings: list[str] = []
    if path.endswith(".jsonl"):
        context: dict = {}
        settings = None
        rows: list[dict] = []
        lines = text.split("\n")
        last = max(i for i, ln in enumerate(lines) if ln.strip())
        for i, ln in enumerate(lines):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as e:
                if i == last:
                    warnings.append(f"{path}:{i + 1}: torn last line ignored (the run stopped while writing it)")
                    continue
                raise LoadError(f"{path}:{i + 1}: malformed line ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise LoadError(f"{path}:{i + 1}: not a JSON object")
            if "context" in obj and isinstance(obj["context"], dict) and len(obj) == 1:
                context = obj["context"]
            elif "layerbench_settings" in obj and len(obj) == 1:  # format 2's first line: what --resume checks
                settings = obj["layerbench_settings"]
            else:
                rows.append(obj)
        _check_rows(rows, path)
        if not context:
            warnings.append(f"{path}: no context line (machine and peaks unknown)")
        elif settings is not None:
            context.setdefault("layerbench_settings", settings)
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise LoadError(f"{path}: {_describe_json_error(text, e)}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            raise LoadError(f"{path}: not a Google Benchmark results file (no 'benchmarks' list)")
        context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
        rows = doc["benchmarks"]
        _check_rows(rows, path)
    cases = build_cases(path, rows)
    if not path.endswith(".jsonl"):
        for k, c in not_measured_cases(path, doc.get("layerbench_not_measured")).items():
            cases.setdefault(k, c)
    nan = [c for c in cases.values() if c.nan_reps]
    if nan:
        warnings.append(f"{path}: {sum(c.nan_reps for c in nan)} repetitions of {len(nan)} cases have no finite time "
                        f"(NaN); they are counted here and left out of the medians (first: {nan[0].name})")
    run = Run(path=path, context=context, cases=cases, warnings=warnings, rows=len(rows))
    for c in cases.values():
        c.machine_name = run.machine
    return run


class Complaints:
    """A complain() for load_many: prints each line as '<tool>: line' on stderr and keeps
    the ones that are not warnings (a command exits 1 when there are any)."""

    def __init__(self, tool: str):
        self.tool = tool
        self.problems: list[str] = []

    def __call__(self, line: str):
        print(f"{self.tool}: {line}", file=sys.stderr)
        if not line.startswith("warning:"):
            self.problems.append(line)


def load_many(paths: list[str], complain) -> list[Run]:
    """Loads every file it can; calls complain(line) once per file that it cannot and per warning."""
    runs = []
    for p in paths:
        try:
            run = load(p)
        except LoadError as e:
            complain(str(e))
            continue
        for w in run.warnings:
            complain("warning: " + w)
        runs.append(run)
    return runs


def all_cases(runs: list[Run], complain=None) -> list[Case]:
    """Cases of every run; where two files hold the same case, the later file's is kept."""
    by_key: dict[tuple, Case] = {}
    dupes = 0
    for run in runs:
        for k, c in run.cases.items():
            if k in by_key:
                dupes += 1
            by_key[k] = c
    if dupes and complain:
        complain(f"warning: {dupes} cases appear in more than one file; the later file's are used")
    return list(by_key.values())
