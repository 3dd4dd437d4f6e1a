"""The report's tables, computed from cases (lbreport.results): the whitepaper table per layer
type and backend, the effect of each optimisation, CPU vs GPU, our kernels vs the vendor's,
per-layer network tables, and the cases that were noisy, failed or unsupported.

Every number comes from the results files (or `layerbench analyze` for network shapes); where
a table has no data the report says what run would fill it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import defaultdict

from . import stats
from .results import Case, parse_problem, problem_without
from .table import Table, fmt_mb, fmt_num, fmt_pct, fmt_ratio, fmt_time

TYPE_ORDER = ["dense", "conv", "depthwise", "pointwise", "lstm"]
# The passes in problem.h's order: inference, then a training step's parts and the whole step.
PASS_ORDER = ["fwd", "fwd_train", "bwd_d", "bwd_w", "bwd", "train"]
BASE_DTYPE = "f32"
# Resident memory is counted in 4 KiB pages and moves with the allocator; below this a
# change in a peak is not a measurement.
MEMORY_FLOOR_BYTES = 256 * 1024
# Our kernels, and the vendor kernels they are measured against.
VENDOR_OF = {"cpu": ("onednn",), "cuda": ("cublas", "cudnn")}


def type_rank(t: str) -> tuple:
    return (TYPE_ORDER.index(t) if t in TYPE_ORDER else len(TYPE_ORDER), t)


def measured(cases):
    return [c for c in cases if c.ok]


def is_baseline(c: Case, dtype=BASE_DTYPE) -> bool:
    """The reference configuration: the dtype given, no ReLU, hot caches, spin sync (GPU default)."""
    return c.ok and c.dtype == dtype and c.relu == "none" and c.cache == "hot" and not c.blocking_sync


def fastest(cases):
    cases = [c for c in cases if c.ok]
    return min(cases, key=lambda c: c.time_us) if cases else None


def row_label(c: Case) -> tuple:
    """Where a case sits in a per-backend table: (device, backend, threads); GPU rows have no threads."""
    return (c.device, c.backend, c.threads if c.device == "cpu" else None)


def row_name(key) -> str:
    device, backend, threads = key
    return f"{backend} ×{threads}" if threads else backend


def _max(xs):
    xs = [x for x in xs if x is not None]
    return max(xs) if xs else None


# --- whitepaper table -------------------------------------------------------------------------


def bound_of(cs):
    """What bounds a set of cases on the roofline (lb_memory_bound: the case's arithmetic
    intensity against the ridge point of its compute peak and memory level's bandwidth):
    "memory", "compute", "memory 3 of 5" when mixed, None when no case has both ceilings."""
    flags = [c.value("lb_memory_bound") for c in cs]
    flags = [f for f in flags if f is not None]
    if not flags:
        return None
    memory = sum(1 for f in flags if f >= 0.5)
    if memory == len(flags):
        return "memory"
    if memory == 0:
        return "compute"
    return f"memory {memory} of {len(flags)}"



def pass_rank(p: str) -> tuple:
    return (PASS_ORDER.index(p) if p in PASS_ORDER else len(PASS_ORDER), p)


def whitepaper(cases, dtype=BASE_DTYPE):
    """Per layer type and pass (forward, backward data, backward weights, training step ...)
    x (device, backend, threads): sums over the problems every row of that type and pass
    measured (so rows compare like with like), the fastest kernel of a backend per problem."""
    t = Table([("layer type", "type"), ("pass", "pass"), ("device", "device"), ("backend", "backend"), ("threads", "threads"),
               ("problems", "problems"), ("time Σ", "time_us_sum"), ("throughput GFLOP/s", "gflop_per_s"),
               ("% of peak (median)", "pct_peak_median"), ("bound", "bound"),
               ("% of its ceiling (median)", "pct_roof_median"), ("CPU util peak %", "cpu_util_peak_max"),
               ("host peak MB (max)", "host_peak_bytes_max"), ("device peak MB (max)", "device_peak_bytes_max"),
               ("GPU util % (median)", "gpu_util_avg_median")],
              right=[False, False, False, False, True, True, True, True, True, False, True, True, True, True, True])
    own_set = []
    by_type: dict[tuple, dict[tuple, dict[str, Case]]] = defaultdict(lambda: defaultdict(dict))
    for c in cases:
        if not is_baseline(c, dtype):
            continue
        d = by_type[(c.type, c.pass_name)][row_label(c)]
        if c.problem not in d or c.time_us < d[c.problem].time_us:
            d[c.problem] = c
    for typ, pass_name in sorted(by_type, key=lambda k: (type_rank(k[0]), pass_rank(k[1]))):
        rows = by_type[(typ, pass_name)]
        common = set.intersection(*(set(d) for d in rows.values()))
        where = typ if pass_name == "fwd" else f"{typ} {pass_name}"
        for key in sorted(rows, key=lambda k: (k[0], k[1], k[2] or 0)):
            d = rows[key]
            probs = common if common else set(d)
            if not common and len(rows) > 1:
                own_set.append(f"{where}/{row_name(key)}")
            cs = [d[p] for p in sorted(probs)]
            time_sum = sum(c.time_us for c in cs)
            flops = [c.flops for c in cs]
            gflops = sum(flops) / time_sum / 1e3 if None not in flops and time_sum > 0 else None
            pct = stats.median(c.value("lb_pct_peak") for c in cs)
            bound = bound_of(cs)
            roof = stats.median(c.value("lb_pct_roof") for c in cs)
            cpu_peak = _max(c.value("lb_cpu_util_peak") for c in cs)
            host = _max(c.host_peak for c in cs)
            dev = _max(c.device_peak for c in cs)
            gpu = stats.median(c.value("lb_gpu_util_avg") for c in cs)
            device, backend, threads = key
            t.add([typ, pass_name, device, backend, threads or "—", len(cs), fmt_time(time_sum), fmt_num(gflops),
                   fmt_pct(pct), bound or "—", fmt_pct(roof), fmt_num(cpu_peak, 3), fmt_mb(host), fmt_mb(dev),
                   fmt_num(gpu)],
                  [typ, pass_name, device, backend, threads, len(cs), time_sum, gflops, pct, bound, roof, cpu_peak,
                   host, dev, gpu])
    return t, own_set


# --- optimisations ------------------------------------------------------------------------------


def optimisation_axes(cases):
    """(label, axis, variant, base): every dtype measured against f32, and the ReLU modes."""
    dtypes = sorted({c.dtype for c in cases if c.ok and c.dtype and c.dtype != BASE_DTYPE})
    axes = [(f"{d} vs f32", "dtype", d, BASE_DTYPE) for d in dtypes]
    axes += [("in-place vs separate ReLU", "relu", "inplace", "separate"),
             ("fused vs separate ReLU", "relu", "fused", "separate"),
             ("separate ReLU vs none", "relu", "separate", "none")]
    return axes


def pairs(cases, axis, variant, base):
    """Cases that differ only in one axis: (base case, variant case)."""
    drop = "dt" if axis == "dtype" else "relu"
    index: dict[tuple, dict[str, Case]] = defaultdict(dict)
    for c in cases:
        if not c.ok:
            continue
        k = (c.kernel, c.threads, c.cache, c.blocking_sync, problem_without(c.problem, drop))
        index[k][getattr(c, axis)] = c
    return [(d[base], d[variant]) for d in index.values() if base in d and variant in d]


def _ratio(a, b, floor=0.0):
    if a is None or b is None or a <= 0 or max(a, b) < floor:
        return None
    return b / a


def pair_ratios(ps):
    """Per pair the ratios new/base of time, host peak, device peak and tensor bytes."""
    out = []
    for a, b in ps:
        out.append({
            "time": _ratio(a.time_us, b.time_us),
            "host": _ratio(a.host_peak, b.host_peak, MEMORY_FLOOR_BYTES),
            "device": _ratio(a.device_peak, b.device_peak, MEMORY_FLOOR_BYTES),
            "tensors": _ratio(a.value("lb_tensor_bytes"), b.value("lb_tensor_bytes")),
        })
    return out


def optimisations(cases):
    t = Table([("optimisation", "optimisation"), ("layer type", "type"), ("device", "device"),
               ("backend", "backend"), ("pairs", "pairs"), ("time Δ", "time_pct"), ("time Δ range", "time_pct_range"),
               ("host peak Δ", "host_peak_pct"), ("device peak Δ", "device_peak_pct"), ("tensors Δ", "tensor_bytes_pct")],
              right=[False, False, False, False, True, True, True, True, True, True])
    for label, axis, variant, base in optimisation_axes(cases):
        # Per pass: an in-place ReLU saves more in a training step (dz over dy too) than in the forward.
        groups = defaultdict(list)
        for a, b in pairs(cases, axis, variant, base):
            groups[(a.pass_name, a.type, a.device, a.backend)].append((a, b))
        for key in sorted(groups, key=lambda k: (pass_rank(k[0]), type_rank(k[1]), k[2], k[3])):
            pass_name, typ, device, backend = key
            label_of_pass = label if pass_name == "fwd" else f"{label} ({pass_name})"
            rs = pair_ratios(groups[key])
            agg = {m: stats.pct_change(stats.geomean([r[m] for r in rs])) for m in ("time", "host", "device", "tensors")}
            times = [stats.pct_change(r["time"]) for r in rs if r["time"] is not None]
            rng = f"{fmt_pct(min(times), True)} … {fmt_pct(max(times), True)}" if len(times) > 1 else "—"
            t.add([label_of_pass, typ, device, backend, len(rs), fmt_pct(agg["time"], True), rng,
                   fmt_pct(agg["host"], True), fmt_pct(agg["device"], True), fmt_pct(agg["tensors"], True)],
                  [label_of_pass, typ, device, backend, len(rs), agg["time"], f"{min(times):.1f}..{max(times):.1f}" if times else "",
                   agg["host"], agg["device"], agg["tensors"]])
    return t


# --- CPU vs GPU, ours vs vendor -----------------------------------------------------------------


def cpu_gpu(cases):
    """Per problem (dtype and batch included, no ReLU): the fastest CPU and GPU case (by device
    time), the GPU case's host wall time beside it, and the speed-up on each."""
    best: dict[str, dict[str, Case]] = defaultdict(dict)
    for c in cases:
        if not (c.ok and c.relu == "none" and c.cache == "hot" and not c.blocking_sync):
            continue
        d = best[c.problem]
        if c.device not in d or c.time_us < d[c.device].time_us:
            d[c.device] = c
    t = Table([("problem", "problem"), ("type", "type"), ("batch", "batch"), ("dtype", "dtype"),
               ("fastest CPU kernel", "cpu_kernel"), ("CPU time", "cpu_time_us"), ("fastest GPU kernel", "gpu_kernel"),
               ("GPU time", "gpu_time_us"), ("GPU speed-up", "speedup"), ("GPU host wall", "gpu_host_wall_us"),
               ("speed-up on host wall", "speedup_host_wall")],
              right=[False, False, True, False, False, True, False, True, True, True, True])
    rows = []
    for problem, d in best.items():
        if "cpu" in d and "gpu" in d:
            rows.append((d["cpu"], d["gpu"]))
    rows.sort(key=lambda r: (type_rank(r[0].type), problem_without(r[0].problem, "mb", "dt"), r[0].dtype, r[0].batch or 0))
    for cpu, gpu in rows:
        s = cpu.time_us / gpu.time_us
        wall = gpu.host_wall_us
        s_wall = cpu.time_us / wall if wall else None
        short = problem_without(cpu.problem, "mb", "dt", "relu")
        t.add([short, cpu.type, cpu.batch, cpu.dtype, f"{cpu.kernel} ×{cpu.threads}", fmt_time(cpu.time_us), gpu.kernel,
               fmt_time(gpu.time_us), fmt_ratio(s), fmt_time(wall), fmt_ratio(s_wall)],
              [short, cpu.type, cpu.batch, cpu.dtype, f"{cpu.kernel} x{cpu.threads}", cpu.time_us, gpu.kernel,
               gpu.time_us, s, wall, s_wall])
    return t, rows


def crossover(cpu_gpu_rows):
    """Per layer type and dtype, the batch from which the GPU is faster, on device time and on
    the host's wall time: at each batch measured on both, the type's problems' CPU times
    summed against their GPU times; the crossover is the smallest batch from which the GPU
    wins at every larger batch measured ("≤ b" where it wins already at the smallest, "none"
    where it loses at the largest)."""
    sums: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0, True]))
    for cpu, gpu in cpu_gpu_rows:
        if cpu.batch is None:
            continue
        s = sums[(cpu.type, cpu.dtype)][cpu.batch]
        s[0] += cpu.time_us
        s[1] += gpu.time_us
        wall = gpu.host_wall_us
        s[2] += wall or 0.0
        s[3] = s[3] and wall is not None

    def batch_from(per_batch, gpu_index):
        batches = sorted(per_batch)
        if any(gpu_index == 2 and not per_batch[b][3] for b in batches):
            return None, "—"
        wins = [per_batch[b][gpu_index] < per_batch[b][0] for b in batches]
        if not wins[-1]:
            return None, "none"
        first = len(wins)
        while first > 0 and wins[first - 1]:
            first -= 1
        b = batches[first]
        return b, (f"≤ {b}" if first == 0 else str(b))

    t = Table([("type", "type"), ("dtype", "dtype"), ("batches measured", "batches"),
               ("GPU faster from batch (device time)", "crossover_device"),
               ("GPU faster from batch (host wall)", "crossover_host_wall")],
              right=[False, False, False, True, True])
    for (typ, dtype), per_batch in sorted(sums.items(), key=lambda kv: (type_rank(kv[0][0]), kv[0][1])):
        batches = ",".join(str(b) for b in sorted(per_batch))
        dev, dev_text = batch_from(per_batch, 1)
        wall, wall_text = batch_from(per_batch, 2)
        t.add([typ, dtype, batches, dev_text, wall_text], [typ, dtype, batches, dev_text, wall_text])
    return t


def ours_vs_vendor(cases):
    """Backends `cpu` and `cuda` as % of the fastest vendor kernel on the same case (100 % = as fast)."""
    vendor: dict[tuple, list[Case]] = defaultdict(list)
    for c in cases:
        if c.ok:
            vendor[(c.backend, c.problem, c.threads if c.device == "cpu" else None, c.cache, c.blocking_sync)].append(c)
    detail = Table([("our kernel", "kernel"), ("problem", "problem"), ("threads", "threads"), ("our time", "our_time_us"),
                    ("vendor kernel", "vendor_kernel"), ("vendor time", "vendor_time_us"), ("% of vendor", "pct_of_vendor")],
                   right=[False, False, True, True, False, True, True])
    per_kernel = defaultdict(list)
    missing_vendor = defaultdict(int)
    for c in cases:
        if not c.ok or c.backend not in VENDOR_OF:
            continue
        threads = c.threads if c.device == "cpu" else None
        vs = [v for b in VENDOR_OF[c.backend] for v in vendor.get((b, c.problem, threads, c.cache, c.blocking_sync), [])]
        v = fastest(vs)
        if v is None:
            missing_vendor[c.kernel] += 1
            continue
        pct = 100.0 * v.time_us / c.time_us
        per_kernel[c.kernel].append(pct)
        detail.add([c.kernel, c.problem, threads or "—", fmt_time(c.time_us), v.kernel, fmt_time(v.time_us), fmt_pct(pct)],
                   [c.kernel, c.problem, threads, c.time_us, v.kernel, v.time_us, pct])
    summary = Table([("our kernel", "kernel"), ("cases", "cases"), ("% of vendor (geomean)", "pct_geomean"),
                     ("worst", "pct_min"), ("best", "pct_max")], right=[False, True, True, True, True])
    for k in sorted(per_kernel):
        ps = per_kernel[k]
        summary.add([k, len(ps), fmt_pct(stats.geomean(ps)), fmt_pct(min(ps)), fmt_pct(max(ps))],
                    [k, len(ps), stats.geomean(ps), min(ps), max(ps)])
    ours = sorted({c.backend for c in cases if c.backend in VENDOR_OF})
    return summary, detail, ours, dict(missing_vendor)


# --- networks -----------------------------------------------------------------------------------


class Analyzer:
    """`layerbench analyze NET --batch N --json`, run once per (network, batch)."""

    def __init__(self, binary: str | None):
        self.binary = binary
        self.cache = {}
        self.problem = None
        if not binary:
            self.problem = "layerbench not found (give --layerbench PATH, or build build/bench/layerbench)"
        elif not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            self.problem = f"layerbench not found at {binary}"

    def networks(self) -> list:
        """The networks layerbench has (`layerbench list --json`): the report knows no list of its own."""
        if self.problem:
            return []
        if not hasattr(self, "_networks"):
            self._networks = []
            try:
                p = subprocess.run([self.binary, "list", "--json"], capture_output=True, text=True, timeout=120)
                if p.returncode == 0:
                    self._networks = json.loads(p.stdout).get("networks", [])
                else:
                    self.last_error = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
            except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                self.problem = f"{self.binary} list --json failed: {e}"
        return self._networks

    def __call__(self, net: str, batch: int):
        if self.problem:
            return None
        key = (net, batch)
        if key not in self.cache:
            try:
                p = subprocess.run([self.binary, "analyze", net, "--batch", str(batch), "--json"],
                                   capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as e:
                self.problem = f"{self.binary} analyze failed: {e}"
                return None
            if p.returncode != 0:
                self.cache[key] = None
                self.last_error = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
            else:
                try:
                    self.cache[key] = json.loads(p.stdout)
                except json.JSONDecodeError as e:
                    self.cache[key] = None
                    self.last_error = [f"analyze printed no JSON ({e.msg})"]
        return self.cache[key]


def default_layerbench():
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for cand in (os.environ.get("LAYERBENCH"), os.path.join(here, "build", "bench", "layerbench"),
                 shutil.which("layerbench")):
        if cand and os.path.isfile(cand):
            return cand
    return None


def _layer_key(problem: str) -> str:
    # A layer named like another network's runs as "<network>.<layer>" (layerbench run).
    problem = re.sub(r"\bname=[^ .]+\.", "name=", problem)
    return problem_without(problem, "mb", "dt", "relu")


def network_tables(cases, analyzer: Analyzer, dtype=BASE_DTYPE):
    """[(network, batch, Table, note)] for every bundled network whose layers the results hold,
    and notes for what could not be made."""
    notes = []
    layer_cases = [c for c in cases if c.ok and c.layer and c.dtype == dtype and c.cache == "hot" and not c.blocking_sync]
    if not layer_cases:
        return [], ["no network layers in these results (results rows with lb_layer, "
                    "e.g. `layerbench run --network mobilenet_v1`)"]
    if analyzer.problem:
        return [], [f"not available: {analyzer.problem}"]
    out = []
    for net in analyzer.networks():
        a1 = analyzer(net, 1)
        if a1 is None:
            notes.append(f"{net}: `layerbench analyze {net}` failed: {' '.join(getattr(analyzer, 'last_error', ['?']))}")
            continue
        per_sample = {}  # layer key -> (layer name, mb at batch 1)
        for layer in a1.get("layers", []):
            if layer.get("problem"):
                _, keys = parse_problem(layer["problem"])
                per_sample[_layer_key(layer["problem"])] = (layer["name"], int(keys.get("mb", "1")))
        matched = defaultdict(list)  # network batch -> cases
        for c in layer_cases:
            hit = per_sample.get(_layer_key(c.problem))
            if hit and c.batch and c.batch % hit[1] == 0:
                matched[c.batch // hit[1]].append(c)
        for batch in sorted(matched):
            a = analyzer(net, batch)
            if a is None:
                notes.append(f"{net} batch {batch}: `layerbench analyze` failed")
                continue
            out.append((net, batch) + _network_table(a, matched[batch]))
    return out, notes


def _network_table(a, cases):
    columns = sorted({row_label(c) for c in cases}, key=lambda k: (k[0], k[1], k[2] or 0))
    by_layer = defaultdict(dict)  # layer key -> column -> fastest case
    for c in cases:
        d = by_layer[_layer_key(c.problem)]
        col = row_label(c)
        d.setdefault(col, []).append(c)
    t = Table([("layer", "layer"), ("type", "type"), ("output", "output_shape"), ("params", "params"),
               ("param MB", "param_bytes"), ("activation MB", "activation_bytes"), ("MMACs", "macs_millions")]
              + [(f"{row_name(k)} ({k[0]})", f"time_us_{k[1]}_{k[0]}" + (f"_t{k[2]}" if k[2] else "")) for k in columns],
              right=[False, False, False, True, True, True, True] + [True] * len(columns))
    totals = defaultdict(float)
    counted = defaultdict(int)
    op_layers = 0
    for layer in a.get("layers", []):
        times = []
        raw_times = []
        if layer.get("problem"):
            op_layers += 1
            d = by_layer.get(_layer_key(layer["problem"]), {})
            want_relu = parse_problem(layer["problem"])[1].get("relu", "none")
            for col in columns:
                cs = d.get(col, [])
                pick = fastest([c for c in cs if c.relu == want_relu]) or None
                times.append(fmt_time(pick.time_us) if pick else "—")
                raw_times.append(pick.time_us if pick else None)
                if pick:
                    totals[col] += pick.time_us
                    counted[col] += 1
        else:
            times = [""] * len(columns)
            raw_times = [None] * len(columns)
        t.add([layer.get("name", ""), layer.get("type", ""), layer.get("output_shape", ""), f"{layer.get('params', 0):,}",
               fmt_mb(layer.get("param_bytes")), fmt_mb(layer.get("activation_bytes")),
               fmt_num(layer.get("macs", 0) / 1e6)] + times,
              [layer.get("name", ""), layer.get("type", ""), layer.get("output_shape", ""), layer.get("params"),
               layer.get("param_bytes"), layer.get("activation_bytes"), layer.get("macs", 0) / 1e6] + raw_times)
    tot = a.get("totals", {})
    total_cells = []
    for col in columns:
        s = fmt_time(totals[col]) if counted[col] else "—"
        if counted[col] and counted[col] < op_layers:
            s += f" ({counted[col]} of {op_layers} layers)"
        total_cells.append(s)
    t.add(["**total**", "", "", f"{tot.get('params', 0):,}", fmt_mb(tot.get("param_bytes")),
           fmt_mb(tot.get("activation_bytes")), fmt_num(tot.get("macs", 0) / 1e6)] + total_cells,
          ["total", "", "", tot.get("params"), tot.get("param_bytes"), tot.get("activation_bytes"),
           tot.get("macs", 0) / 1e6] + [totals[c] if counted[c] else None for c in columns])
    note = (f"inference memory estimate {fmt_mb(tot.get('inference_bytes'))} MB; "
            f"{op_layers} op layers, times are the fastest kernel of each backend at {BASE_DTYPE}")
    return t, note


# --- what went wrong ----------------------------------------------------------------------------


def noisy(cases, max_cv):
    t = Table([("case", "case"), ("CV of time", "cv"), ("repetitions", "repetitions"), ("median time", "time_us"),
               ("file", "file")], right=[False, True, True, True, False])
    rows = [c for c in cases if c.ok and (c.noisy or (c.cv is not None and c.cv > max_cv))]
    for c in sorted(rows, key=lambda c: -(c.cv or 0)):
        t.add([c.label, fmt_pct(100 * c.cv) if c.cv is not None else "—", len(c.reps), fmt_time(c.time_us),
               os.path.basename(c.source)],
              [c.label, c.cv, len(c.reps), c.time_us, c.source])
    return t


def above_peak(cases):
    """Cases whose % of peak (the median repetition's) is above 100, each with what it ran
    (lb_details: an FFT or Winograd algorithm does fewer FLOPs than the model counts)."""
    t = Table([("case", "case"), ("% of peak", "pct_peak"), ("what it ran", "details"), ("file", "file")],
              right=[False, True, False, False])
    rows = [(c, c.value("lb_pct_peak")) for c in cases if c.ok]
    for c, pct in sorted(((c, p) for c, p in rows if p is not None and p > 100.0), key=lambda cp: -cp[1]):
        t.add([c.label, fmt_pct(pct), c.details or "—", os.path.basename(c.source)],
              [c.label, pct, c.details, c.source])
    return t


def not_measured(cases):
    """Failed and out-of-memory cases one by one; unsupported and mistrusted grouped by reason."""
    failed = Table([("case", "case"), ("status", "status"), ("reason", "reason"), ("file", "file")])
    for c in sorted((c for c in cases if c.status in ("failed", "out_of_memory")), key=lambda c: (c.status, c.name)):
        reason = c.error_message or c.reason
        failed.add([c.label, c.status, reason, os.path.basename(c.source)], [c.label, c.status, reason, c.source])
    grouped = Table([("status", "status"), ("kernel", "kernel"), ("dtype", "dtype"), ("cases", "cases"),
                     ("reason", "reason"), ("example", "example")], right=[False, False, False, True, False, False])
    groups = defaultdict(list)
    for c in cases:
        if c.status in ("unsupported", "mistrusted"):
            groups[(c.status, c.kernel, c.dtype, c.reason or c.error_message)].append(c)
    for (status, kernel, dtype, reason), cs in sorted(groups.items()):
        grouped.add([status, kernel, dtype, len(cs), reason, cs[0].label],
                    [status, kernel, dtype, len(cs), reason, cs[0].label])
    return failed, grouped


def cases_table(cases):
    """Every case, one row: the flat CSV for anyone's own analysis."""
    cols = [("case", "case"), ("file", "file"), ("status", "status"), ("kernel", "kernel"), ("backend", "backend"),
            ("device", "device"), ("op", "op"), ("type", "type"), ("dtype", "dtype"), ("relu", "relu"),
            ("threads", "threads"), ("cache", "cache"), ("blocking sync", "blocking_sync"), ("batch", "batch"),
            ("layer", "layer"), ("problem", "problem"), ("repetitions", "repetitions"), ("time", "time_us"),
            ("CV", "cv"), ("GFLOP/s", "gflop_per_s"), ("% of peak", "pct_peak"), ("% of bandwidth", "pct_bw"),
            ("bound", "bound"), ("% of its ceiling", "pct_roof"), ("CPU util avg", "cpu_util_avg"),
            ("CPU util peak", "cpu_util_peak"), ("host peak MB", "host_peak_bytes"), ("tensor MB", "tensor_bytes"),
            ("device peak MB", "device_peak_bytes"), ("GPU util avg", "gpu_util_avg"), ("MACs", "pred_macs"),
            ("reason", "reason")]
    t = Table(cols)
    for c in sorted(cases, key=lambda c: (c.source, c.name)):
        raw = [c.label, c.source, c.status, c.kernel, c.backend, c.device, c.op, c.type, c.dtype, c.relu, c.threads,
               c.cache, c.blocking_sync, c.batch, c.layer, c.problem, len(c.reps), c.time_us, c.cv, c.gflops,
               c.value("lb_pct_peak"), c.value("lb_pct_bw"), bound_of([c]), c.value("lb_pct_roof"),
               c.value("lb_cpu_util_avg"), c.value("lb_cpu_util_peak"), c.host_peak,
               c.value("lb_tensor_bytes"), c.device_peak, c.value("lb_gpu_util_avg"), c.value("lb_pred_macs"),
               c.error_message or c.reason]
        t.add([fmt_num(v) if isinstance(v, float) else ("" if v is None else v) for v in raw], raw)
    return t
