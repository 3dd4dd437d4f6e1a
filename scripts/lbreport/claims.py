"""The claims users bring (docs/claims.md), each checked against the results: a
verdict — confirmed, refuted, depends, or not measured — and the numbers behind it.

Rules every check follows: a verdict comes only from measured cases (model counters such as
lb_pred_macs are the analytic model's and are named as such); a part of a claim without data
says which run would provide it; thresholds are stated next to the verdict they decide.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from . import stats
from .analysis import BASE_DTYPE, MEMORY_FLOOR_BYTES, fastest, pairs, type_rank
from .results import parse_problem, print_problem, problem_without
from .table import Table, fmt_mb, fmt_num, fmt_pct, fmt_ratio, fmt_time

CONFIRMED, REFUTED, DEPENDS, NOT_MEASURED = "confirmed", "refuted", "depends", "not measured"
GPU_RUN = "a GPU run (`layerbench run` on a machine with a GPU and the cuda/cublas/cudnn backends)"


@dataclass
class Verdict:
    number: int
    title: str
    verdict: str
    summary: str  # one or two sentences with the deciding numbers
    lines: list[str] = field(default_factory=list)  # more numbers, Markdown bullets
    table: Table | None = None


def _combine(parts):
    """Verdict of a claim from the verdicts of its measured parts."""
    got = [p for p in parts if p != NOT_MEASURED]
    if not got:
        return NOT_MEASURED
    if all(p == CONFIRMED for p in got):
        return CONFIRMED
    if all(p == REFUTED for p in got):
        return REFUTED
    return DEPENDS


def _quartiles(xs):
    s = sorted(xs)
    return s[len(s) // 4], s[(3 * len(s)) // 4]


def decoupled(cases, mem, util):
    """Cases in the top quartile of memory and the bottom quartile of utilisation, or the reverse."""
    m_lo, m_hi = _quartiles([mem(c) for c in cases])
    u_lo, u_hi = _quartiles([util(c) for c in cases])
    return [c for c in cases if (mem(c) >= m_hi and util(c) <= u_lo) or (mem(c) <= m_lo and util(c) >= u_hi)]


def _corr_verdict(rho, n_decoupled):
    if rho is None:
        return NOT_MEASURED
    if abs(rho) < 0.5 or (n_decoupled and rho <= 0.8):
        return CONFIRMED
    if rho > 0.8 and not n_decoupled:
        return REFUTED
    return DEPENDS


def _span(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return (min(xs), max(xs)) if xs else (None, None)


def claim1(cases):
    """Memory use and utilisation are different things (GPU and CPU)."""
    parts, lines = [], []
    cpu = [c for c in cases if c.ok and c.device == "cpu" and c.host_peak and c.value("lb_cpu_util_peak") is not None]
    if len(cpu) >= 5:
        rho = stats.spearman([c.host_peak for c in cpu], [c.value("lb_cpu_util_peak") for c in cpu])
        lo, hi = _span([c.host_peak for c in cpu])
        ulo, uhi = _span([c.value("lb_cpu_util_peak") for c in cpu])
        dec = decoupled(cpu, lambda c: c.host_peak, lambda c: c.value("lb_cpu_util_peak"))
        v = _corr_verdict(rho, len(dec))
        parts.append(v)
        lines.append(f"CPU ({len(cpu)} cases): host peak spans {fmt_mb(lo)}–{fmt_mb(hi)} MB while CPU utilisation "
                     f"peak spans {fmt_num(ulo)}–{fmt_num(uhi)} %; Spearman ρ(host peak, CPU util) = {fmt_num(rho, 2)}; "
                     f"{len(dec)} cases in the top quartile of one and the bottom quartile of the other → {v}.")
        big = max(cpu, key=lambda c: c.host_peak)
        lines.append(f"largest host peak: `{big.label}` {fmt_mb(big.host_peak)} MB at "
                     f"{fmt_num(big.value('lb_cpu_util_peak'))} % CPU.")
    else:
        parts.append(NOT_MEASURED)
        lines.append("CPU part not measured: needs ≥ 5 measured CPU cases with lb_host_peak_bytes and lb_cpu_util_peak.")
    # NVML's utilisation is written only for timed loops of at least a second (it averages
    # over its own sample period); the busy share from the events is there for every case.
    gpu = [c for c in cases if c.ok and c.device == "gpu" and c.device_peak]
    util_key = "lb_gpu_util_avg"
    if sum(c.value(util_key) is not None for c in gpu) < 5:
        util_key = "lb_gpu_busy_pct"
    gpu = [c for c in gpu if c.value(util_key) is not None]
    util_name = "NVML GPU utilisation" if util_key == "lb_gpu_util_avg" else "GPU busy share (event time / wall time)"
    if len(gpu) >= 5:
        rho = stats.spearman([c.device_peak for c in gpu], [c.value(util_key) for c in gpu])
        lo, hi = _span([c.device_peak for c in gpu])
        ulo, uhi = _span([c.value(util_key) for c in gpu])
        dec = decoupled(gpu, lambda c: c.device_peak, lambda c: c.value(util_key))
        v = _corr_verdict(rho, len(dec))
        parts.append(v)
        lines.append(f"GPU ({len(gpu)} cases): device peak spans {fmt_mb(lo)}–{fmt_mb(hi)} MB while {util_name} "
                     f"spans {fmt_num(ulo)}–{fmt_num(uhi)} %; Spearman ρ(device peak, GPU util) = {fmt_num(rho, 2)}; "
                     f"{len(dec)} cases in the top quartile of one and the bottom quartile of the other → {v}.")
        full_idle = max(gpu, key=lambda c: c.device_peak / max(c.value(util_key), 1.0))
        lines.append(f"most memory per unit of utilisation: `{full_idle.label}` {fmt_mb(full_idle.device_peak)} MB at "
                     f"{fmt_num(full_idle.value(util_key))} % GPU.")
    else:
        parts.append(NOT_MEASURED)
        lines.append(f"GPU part not measured: needs {GPU_RUN} with lb_device_peak_bytes and lb_gpu_util_avg "
                     "(timed loops of ≥ 1 s) or lb_gpu_busy_pct.")
    verdict = _combine(parts)
    summary = ("Rule: |ρ| < 0.5 between memory peak and utilisation, or ρ ≤ 0.8 with cases high in one and low in the "
               "other (top vs bottom quartile) → different things (confirmed); ρ > 0.8 with no such case → they move "
               "together (refuted); otherwise depends.")
    return Verdict(1, "Memory use and utilisation are different things (GPU memory vs GPU%, host memory vs CPU%)",
                   verdict, summary, lines)


def claim2(cases):
    """A GPU run can keep a CPU core at 100 %; blocking sync brings it down."""
    gpu = [c for c in cases if c.ok and c.device == "gpu" and c.value("lb_cpu_util_avg") is not None]
    spin = [c for c in gpu if c.blocking_sync in (0, None)]
    block = [c for c in gpu if c.blocking_sync == 1]
    if not spin and not block:
        return Verdict(2, "A GPU run can keep a CPU core at 100 %; blocking synchronisation brings it down", NOT_MEASURED,
                       f"not measured: needs {GPU_RUN}, once with spin and once with blocking synchronisation "
                       "(lb_blocking_sync 0 and 1).")
    lines = []
    ms = stats.median([c.value("lb_cpu_util_avg") for c in spin])
    mb = stats.median([c.value("lb_cpu_util_avg") for c in block])
    if spin:
        lines.append(f"spin synchronisation: median host CPU utilisation {fmt_num(ms)} % over {len(spin)} GPU cases "
                     f"(max {fmt_num(max(c.value('lb_cpu_util_avg') for c in spin))} %).")
    if block:
        lines.append(f"blocking synchronisation: median {fmt_num(mb)} % over {len(block)} GPU cases.")
    # Paired by case where both were measured.
    by_name = defaultdict(dict)  # layerbench names a blocking-sync case "<...>-sync_blocking/threads:N"
    for c in gpu:
        by_name[(c.name.replace("-sync_blocking/", "/"), c.cache)][c.blocking_sync or 0] = c
    paired = [(d[0], d[1]) for d in by_name.values() if 0 in d and 1 in d]
    if paired:
        drop = stats.median([a.value("lb_cpu_util_avg") - b.value("lb_cpu_util_avg") for a, b in paired])
        slow = stats.geomean([_safe_ratio(b.time_us, a.time_us) for a, b in paired])
        lines.append(f"{len(paired)} cases measured both ways: blocking lowers CPU utilisation by a median "
                     f"{fmt_num(drop)} points and changes time by {fmt_pct(stats.pct_change(slow), True)} (geomean).")
    first = None if ms is None else (CONFIRMED if ms >= 80 else REFUTED if ms < 50 else DEPENDS)
    if mb is None or ms is None:
        second = NOT_MEASURED
        lines.append("blocking half not measured: needs a GPU run with blocking synchronisation (lb_blocking_sync = 1)"
                     if mb is None else "spin half not measured: needs a GPU run with spin synchronisation.")
    else:
        second = CONFIRMED if mb <= ms / 2 else REFUTED if mb >= 0.9 * ms else DEPENDS
    verdict = _combine([first or NOT_MEASURED, second])
    lines.insert(0, f"median host CPU utilisation of GPU cases: {fmt_num(ms)} % with spin sync → {first or NOT_MEASURED}; "
                    f"{fmt_num(mb)} % with blocking sync → {second}.")
    summary = ("Rule: median host CPU utilisation of GPU cases ≥ 80 % under spin sync confirms the first half (< 50 % "
               "refutes it); blocking sync at ≤ half the spin value confirms the second (≥ 90 % of it refutes it).")
    return Verdict(2, "A GPU run can keep a CPU core at 100 %; blocking synchronisation brings it down", verdict,
                   summary, lines)


def _safe_ratio(a, b):
    return a / b if a and b else None


def batch_groups(cases, min_batches=2):
    """Cases that differ only in batch: {group key: {batch: case}} with at least min_batches batches."""
    groups = defaultdict(dict)
    for c in cases:
        if c.ok and c.batch:
            k = (c.kernel, c.threads, c.cache, c.blocking_sync, c.dtype, c.relu, problem_without(c.problem, "mb"))
            groups[k][c.batch] = c
    return {k: v for k, v in groups.items() if len(v) >= min_batches}


def memory_fits(cases, metric="host"):
    """Per batch group: peak memory = fixed + slope x batch. -> list of dicts, largest memory first."""
    out = []
    for k, d in batch_groups(cases).items():
        bs = sorted(d)
        ys = [d[b].host_peak if metric == "host" else d[b].device_peak for b in bs]
        if any(y is None for y in ys) or max(ys) < MEMORY_FLOOR_BYTES:
            continue  # resident memory moves in pages: below the floor a fit is noise
        fit = stats.linear_fit(bs, ys)
        if fit is None:
            continue
        a, s, r2 = fit
        c0 = d[bs[0]]
        act = c0.value("lb_pred_act_bytes")
        out.append({"group": k, "cases": d, "batches": bs, "peaks": ys, "fixed": a, "slope": s, "r2": r2,
                    "type": c0.type, "label": f"{c0.kernel} {problem_without(c0.problem, 'mb')}",
                    "short": f"{c0.kernel} {c0.layer or problem_without(c0.problem, 'mb', 'dt', 'relu')} {c0.dtype}"
                             + ("" if c0.relu == "none" else f" relu={c0.relu}"),
                    "params": c0.value("lb_pred_param_bytes"),
                    "act_per_sample": act / bs[0] if act is not None else None,
                    "first": ys[0]})
    out.sort(key=lambda f: -max(f["peaks"]))
    return out


# Claims 3, 4 and 6 are about memory, which a training step holds more of than inference
# (the inputs every layer keeps for its backward, the gradients): each is judged on the
# forward pass (no dir=) and on the whole training step (dir=train) apart, every line and
# table row saying which; the other passes are parts of a step.
MEMORY_PASSES = (("inference", "fwd"), ("training step", "train"))


def by_memory_pass(cases):
    """[(what, pass, cases of that pass)] for the passes of MEMORY_PASSES that have cases."""
    out = []
    for what, name in MEMORY_PASSES:
        cs = [c for c in cases if c.pass_name == name]
        if cs:
            out.append((what, name, cs))
    return out


def _of_pass(label, name):
    return label if name == "fwd" else f"{label} (dir={name})"


def claim3(cases):
    lines = []
    parts = []
    table = Table([("case (all batches)", "group"), ("device", "device"), ("batches", "batches"), ("fixed MB", "fixed_bytes"),
                   ("MB per sample", "slope_bytes"), ("R²", "r2"), ("model params MB", "pred_param_bytes"),
                   ("model activations MB/sample", "pred_act_bytes_per_sample")],
                  right=[False, False, False, True, True, True, True, True])
    for (what, pass_name, group), metric in ((g, m) for g in by_memory_pass(cases) for m in ("host", "device")):
        fits = memory_fits(group, metric)
        if not fits:
            continue
        grows = [f for f in fits if f["slope"] > 0]
        fixed = [f for f in fits if f["first"] > 0 and f["fixed"] > 0.1 * f["first"]]
        n = len(fits)
        v = (CONFIRMED if len(grows) >= 2 * n / 3 and len(fixed) >= 2 * n / 3
             else REFUTED if len(grows) < n / 3 or len(fixed) < n / 3 else DEPENDS)
        parts.append(v)
        share = stats.median([f["fixed"] / f["first"] for f in fits if f["first"] > 0])
        lines.append(f"{what}, {metric} peak ({n} cases measured at ≥ 2 batch sizes): grows with batch in {len(grows)}, has a "
                     f"fixed part > 10 % of the smallest batch's peak in {len(fixed)} (median fixed share "
                     f"{fmt_pct(100 * share if share is not None else None)}) → {v}.")
        two_points = sum(1 for f in fits if len(f["batches"]) == 2)
        if two_points:
            lines.append(f"{two_points} of these have only two batch sizes: their line passes through both points (R² = 1).")
        by_type = defaultdict(list)
        for f in fits:
            by_type[f["type"]].append(f)
        for typ in sorted(by_type, key=type_rank):
            fs = by_type[typ]
            lines.append(f"{what}, {metric} / {typ}: median fixed {fmt_mb(stats.median([f['fixed'] for f in fs]))} MB, "
                         f"median {fmt_mb(stats.median([f['slope'] for f in fs]))} MB per sample "
                         f"(model: params {fmt_mb(stats.median([f['params'] for f in fs]))} MB, activations "
                         f"{fmt_mb(stats.median([f['act_per_sample'] for f in fs]))} MB per sample).")
        for f in fits[:12]:
            label = _of_pass(f["label"], pass_name)
            table.add([label, metric, ",".join(map(str, f["batches"])), fmt_mb(f["fixed"]), fmt_mb(f["slope"]),
                       fmt_num(f["r2"], 3), fmt_mb(f["params"]), fmt_mb(f["act_per_sample"])],
                      [label, metric, " ".join(map(str, f["batches"])), f["fixed"], f["slope"], f["r2"], f["params"],
                       f["act_per_sample"]])
    if not any(r for r in table.raw if r[1] == "device"):
        lines.append(f"device memory not measured: needs {GPU_RUN} at ≥ 2 batch sizes.")
    if not parts:
        return Verdict(3, "Parameter memory is fixed; activation memory grows with batch (fixed part + per-sample slope)",
                       NOT_MEASURED, "not measured: needs the same cases at ≥ 2 batch sizes (e.g. --batch 1,16,64).",
                       lines)
    summary = ("Fit of peak memory vs batch per case: fixed part (intercept) + slope per sample, for inference and "
               "for the training step (dir=train) apart where both were measured. Rule: slope > 0 and a fixed part > "
               "10 % of the smallest batch's peak in ≥ 2/3 of the cases confirms; in < 1/3 refutes.")
    return Verdict(3, "Parameter memory is fixed; activation memory grows with batch (fixed part + per-sample slope)",
                   _combine(parts), summary, lines, table)


def _dense_elements(c):
    op, k = parse_problem(c.problem)
    try:
        ic, oc = int(k["ic"]), int(k["oc"])
    except (KeyError, ValueError):
        return None
    return ic * oc + oc


CLAIMED_SAVING = {"bf16": 15.0, "f16": 15.0, "i8": 30.0, "f8": 30.0}


def claim4(cases):
    lines, parts = [], []
    dense = [c for c in cases if c.ok and c.op == "dense" and c.dtype == "f32" and c.pass_name == "fwd"
             and c.value("lb_pred_param_bytes")]
    if dense:
        per = stats.median([c.value("lb_pred_param_bytes") / _dense_elements(c) for c in dense if _dense_elements(c)])
        big = max(dense, key=lambda c: c.value("lb_pred_param_bytes"))
        lines.append(f"f32 dense parameters: {fmt_num(per)} bytes per value (model, lb_pred_param_bytes ÷ (ic·oc + oc)); "
                     f"the largest, `{big.problem}`, holds {fmt_mb(big.value('lb_pred_param_bytes'))} MB of parameters; "
                     f"measured host peak of that case {fmt_mb(big.host_peak)} MB.")
    table = Table([("dtype vs f32", "dtype"), ("layer type", "type"), ("pairs", "pairs"), ("tensor saving", "tensor_saving_pct"),
                   ("host peak saving", "host_saving_pct"), ("device peak saving", "device_saving_pct"),
                   ("claimed", "claimed_saving_pct")], right=[False, False, True, True, True, True, True])
    dtypes = sorted({c.dtype for c in cases if c.ok and c.dtype in CLAIMED_SAVING})
    for (what, pass_name, group), dt in ((g, d) for g in by_memory_pass(cases) for d in dtypes):
        groups = defaultdict(list)
        for a, b in pairs(group, "dtype", dt, "f32"):
            groups[a.type].append((a, b))
        if not groups:
            continue
        verdicts = []
        for typ in sorted(groups, key=type_rank):
            ps = groups[typ]

            def saving(metric, floor=MEMORY_FLOOR_BYTES):
                rs = []
                for a, b in ps:
                    x, y = (a.value("lb_tensor_bytes"), b.value("lb_tensor_bytes")) if metric == "tensors" else \
                        (a.host_peak, b.host_peak) if metric == "host" else (a.device_peak, b.device_peak)
                    if x and y is not None and max(x, y) >= (0 if metric == "tensors" else floor):
                        rs.append(y / x)
                return None if not rs else -stats.pct_change(stats.geomean(rs))

            st, sh, sd = saving("tensors"), saving("host"), saving("device")
            claimed = CLAIMED_SAVING[dt]
            measured_ = [s for s in (sh, sd) if s is not None]
            for s in measured_:
                verdicts.append(CONFIRMED if abs(s - claimed) <= 10 else REFUTED)
            table.add([dt, _of_pass(typ, pass_name), len(ps), fmt_pct(st), fmt_pct(sh), fmt_pct(sd), fmt_pct(claimed)],
                      [dt, _of_pass(typ, pass_name), len(ps), st, sh, sd, claimed])
        parts.append(_combine(verdicts) if verdicts else NOT_MEASURED)
        rows = [r for r in table.raw if r[0] == dt and r[1] in {_of_pass(t, pass_name) for t in groups}]
        got = [x for r in rows for x in (r[4], r[5]) if x is not None]
        if got:
            lines.append(f"{what}, {dt} vs f32: measured peak savings {fmt_pct(min(got))} … {fmt_pct(max(got))} over "
                         f"{len(rows)} layer types, claimed {fmt_pct(CLAIMED_SAVING[dt])} → {parts[-1]}.")
    missing = [d for d in ("bf16", "i8") if d not in dtypes]
    if missing:
        lines.append("not measured: " + ", ".join(missing) + " vs f32 pairs (e.g. `--dtype f32," + ",".join(missing) + "`).")
    if not any(r[5] is not None for r in table.raw):
        lines.append(f"device memory savings not measured: needs {GPU_RUN} with several dtypes.")
    summary = ("Saving = 1 − (peak with the reduced dtype ÷ peak with f32) for the same case, geometric mean per layer "
               "type, for inference and for the training step (dir=train) apart; the notes claim ≈ 15 % for mixed "
               "precision and ≈ 30 % for 8-bit. Rule: within ±10 points of the "
               "claim → confirmed, further off → refuted, mixed across layer types → depends. Tensor saving is the "
               "bytes of our tensors (exact); host and device peaks are measured (pairs above "
               f"{MEMORY_FLOOR_BYTES // 1024} KiB).")
    verdict = _combine(parts) if parts else NOT_MEASURED
    return Verdict(4, "fp32 takes 4 bytes per value; reduced precision saves ≈ 15 % (mixed) and ≈ 30 % (8-bit) of memory",
                   verdict, summary, lines, table if len(table) else None)


def claim5(cases, network_analyses):
    """Convolution outputs take most memory; parameters little (except large dense layers)."""
    lines = []
    seen = {}
    for c in cases:
        if c.ok and c.dtype == BASE_DTYPE and c.relu == "none" and c.value("lb_pred_param_bytes") is not None:
            seen[c.problem] = c
    if not seen and not network_analyses:
        return Verdict(5, "Convolution outputs take the most memory; parameters comparatively little (except large "
                       "dense layers)", NOT_MEASURED, "not measured: needs f32 cases or network analyses.")
    conv_types = ("conv", "depthwise", "pointwise")
    table = Table([("layer type", "type"), ("batch", "batch"), ("problems", "problems"),
                   ("activations > parameters", "act_gt_param"), ("median activations ÷ parameters", "act_over_param")],
                  right=[False, True, True, True, True])
    groups = defaultdict(list)
    for c in seen.values():
        groups[(c.type, c.batch)].append(c)
    conv_share, dense_share = [], []
    for (typ, b) in sorted(groups, key=lambda k: (type_rank(k[0]), k[1] or 0)):
        cs = groups[(typ, b)]
        ratios = [c.value("lb_pred_act_bytes") / c.value("lb_pred_param_bytes") for c in cs
                  if c.value("lb_pred_param_bytes") and c.value("lb_pred_act_bytes") is not None]
        more = sum(1 for r in ratios if r > 1)
        if typ in conv_types:
            conv_share.append((more, len(ratios)))
        elif typ == "dense":
            dense_share.append((len(ratios) - more, len(ratios)))
        table.add([typ, b, len(cs), f"{more} of {len(ratios)}", fmt_num(stats.median(ratios))],
                  [typ, b, len(cs), more, stats.median(ratios)])
    for net, batch, a in network_analyses:
        conv_layers = [l for l in a.get("layers", []) if l.get("type") in conv_types]
        dense_layers = [l for l in a.get("layers", []) if l.get("type") == "dense"]
        act = sum(l.get("activation_bytes", 0) for l in conv_layers)
        par = sum(l.get("param_bytes", 0) for l in conv_layers)
        dpar = sum(l.get("param_bytes", 0) for l in dense_layers)
        tot = a.get("totals", {})
        if conv_layers:
            conv_share.append((sum(1 for l in conv_layers if l.get("activation_bytes", 0) > l.get("param_bytes", 0)),
                               len(conv_layers)))
            lines.append(f"{net} at batch {batch} (`layerbench analyze`): convolution outputs {fmt_mb(act)} MB vs "
                         f"their parameters {fmt_mb(par)} MB; dense parameters {fmt_mb(dpar)} MB of "
                         f"{fmt_mb(tot.get('param_bytes'))} MB in all.")
        else:
            lines.append(f"{net} at batch {batch} (`layerbench analyze`): no convolutions; dense parameters "
                         f"{fmt_mb(dpar)} MB of {fmt_mb(tot.get('param_bytes'))} MB in all.")
        if dense_layers:
            dense_share.append((sum(1 for l in dense_layers if l.get("param_bytes", 0) > l.get("activation_bytes", 0)),
                                len(dense_layers)))
    parts = []
    if conv_share:
        m, n = sum(x for x, _ in conv_share), sum(y for _, y in conv_share)
        parts.append(CONFIRMED if m >= 2 * n / 3 else REFUTED if m < n / 3 else DEPENDS)
        lines.append(f"convolutions whose activations exceed their parameters: {m} of {n} → {parts[-1]}.")
    if dense_share:
        m, n = sum(x for x, _ in dense_share), sum(y for _, y in dense_share)
        parts.append(CONFIRMED if m >= 2 * n / 3 else REFUTED if m < n / 3 else DEPENDS)
        lines.append(f"dense layers whose parameters exceed their activations: {m} of {n} → {parts[-1]}.")
    summary = ("From the analytic model of each measured problem (lb_pred_act_bytes: input + output (+ ReLU buffer); "
               "lb_pred_param_bytes) and the network analyses. Rule: ≥ 2/3 of convolutions with activations > "
               "parameters and ≥ 2/3 of dense layers the reverse → confirmed; < 1/3 → refuted; otherwise depends "
               "(typically on batch size and depth).")
    return Verdict(5, "Convolution outputs take the most memory; parameters comparatively little (except large dense "
                   "layers)", _combine(parts) if parts else NOT_MEASURED, summary, lines, table)


def claim6(cases):
    lines, parts = [], []
    judged = set()
    for what, pass_name, group in by_memory_pass(cases):
        ps = pairs(group, "relu", "inplace", "separate")
        if not ps:
            continue
        judged.add(pass_name)
        tensors = [(a.value("lb_tensor_bytes") or 0) - (b.value("lb_tensor_bytes") or 0) for a, b in ps]
        host = [(a.host_peak, b.host_peak) for a, b in ps
                if a.host_peak is not None and b.host_peak is not None
                and max(a.host_peak, b.host_peak) >= MEMORY_FLOOR_BYTES]
        dev = [(a.device_peak, b.device_peak) for a, b in ps
               if a.device_peak is not None and b.device_peak is not None
               and max(a.device_peak, b.device_peak) >= MEMORY_FLOOR_BYTES]
        lines.append(f"{what}: {len(ps)} pairs (same kernel, dtype and problem): in-place holds a median "
                     f"{fmt_mb(stats.median(tensors))} MB fewer bytes of tensors (the separate ReLU's output buffer"
                     + (", and in the backward its gradient's)." if pass_name != "fwd" else ")."))
        for name, xs in (("host", host), ("device", dev)):
            if not xs:
                lines.append(f"{what}, {name} peak not measured"
                             + (f": needs {GPU_RUN} with --relu inplace,separate." if name == "device"
                                else f": no pair above {MEMORY_FLOOR_BYTES // 1024} KiB."))
                parts.append(NOT_MEASURED)
                continue
            savings = [a - b for a, b in xs]
            smaller = sum(1 for s in savings if s > 0)
            pct = stats.median([100.0 * (a - b) / a for a, b in xs if a > 0])
            v = CONFIRMED if smaller >= 2 * len(xs) / 3 and stats.median(savings) > 0 else \
                REFUTED if stats.median(savings) <= 0 else DEPENDS
            parts.append(v)
            lines.append(f"{what}, {name} peak: in-place lower in {smaller} of {len(xs)} pairs, median saving "
                         f"{fmt_mb(stats.median(savings))} MB ({fmt_pct(pct)}) → {v}.")
        times = [stats.pct_change(b.time_us / a.time_us) for a, b in ps]
        lines.append(f"{what}, time, in-place vs separate: median {fmt_pct(stats.median(times), True)}.")
    if not judged:
        return Verdict(6, "An in-place ReLU saves memory", NOT_MEASURED,
                       "not measured: needs the same cases with --relu inplace,separate.")
    if "train" not in judged:
        lines.append("the training half of the claim (the backward computed from the output alone) is not measured "
                     "here: needs the same cases with --dir train.")
    summary = ("Pairs of the same case with --relu separate and --relu inplace, for inference and for the training "
               "step (dir=train) apart. Rule: in-place peak lower in ≥ 2/3 of the pairs with a positive median saving "
               "→ confirmed; median saving ≤ 0 → refuted; otherwise depends.")
    return Verdict(6, "An in-place ReLU saves memory", _combine(parts), summary, lines)


def claim7(cases, network_rows):
    lines = []
    groups = defaultdict(list)
    for c in cases:
        if c.ok and c.relu == "none" and c.cache == "hot" and not c.blocking_sync and c.value("lb_pred_macs"):
            groups[(c.device, c.backend, c.dtype, c.threads)].append(c)
    rhos = []
    for k in sorted(groups):
        cs = groups[k]
        rho = stats.spearman([c.value("lb_pred_macs") for c in cs], [c.time_us for c in cs])
        if rho is not None and len(cs) >= 5:
            rhos.append(rho)
            lines.append(f"{k[1]} {k[2]} ×{k[3]} ({k[0]}, {len(cs)} cases): Spearman ρ(MACs, time) = {fmt_num(rho, 2)}.")
    if not rhos:
        return Verdict(7, "MACs measure compute; per-layer tables show where a network's cost is", NOT_MEASURED,
                       "not measured: needs ≥ 5 measured cases of one backend and dtype.")
    per_type = defaultdict(list)
    for cs in groups.values():
        for c in cs:
            if c.dtype == BASE_DTYPE:
                per_type[(c.device, c.type)].append(c.time_us * 1e3 / c.value("lb_pred_macs"))
    spread = []
    for dev in sorted({d for d, _ in per_type}):
        meds = {t: stats.median(v) for (d, t), v in per_type.items() if d == dev}
        if len(meds) >= 2:
            lo, hi = min(meds.values()), max(meds.values())
            spread.append(hi / lo)
            lines.append(f"{dev} f32, time per MAC by layer type (median over kernels): " +
                         ", ".join(f"{t} {fmt_num(meds[t])} ns/MAC" for t in sorted(meds, key=type_rank)) +
                         f" — a {fmt_num(hi / lo)}× spread.")
    largest = {}
    for net, batch, *_ in network_rows:
        largest[net] = max(batch, largest.get(net, 0))
    for net, batch, col, top_macs, top_time in network_rows:
        if batch != largest[net]:
            continue
        lines.append(f"{net} batch {batch}, {col}: most MACs in `{top_macs}`, most time in `{top_time}`.")
    rho = stats.median(rhos)
    worst = max(spread) if spread else 1.0
    verdict = (CONFIRMED if rho >= 0.9 and worst < 3 else REFUTED if rho < 0.5 else DEPENDS)
    lines.insert(0, f"median ρ(MACs, time) over {len(rhos)} backend/dtype groups = {fmt_num(rho, 2)}; time per MAC "
                    f"varies {fmt_num(worst)}× between layer types → {verdict}.")
    summary = (f"Median rank correlation of MACs and time over backends: ρ = {fmt_num(rho, 2)}; time per MAC varies "
               f"{fmt_num(worst)}× between layer types. Rule: ρ ≥ 0.9 with < 3× spread → confirmed; ρ < 0.5 → refuted; "
               "otherwise depends (on the layer type: memory-bound layers cost more per MAC).")
    return Verdict(7, "MACs measure compute; per-layer tables show where a network's cost is", verdict, summary, lines)


def _conv_shape(keys):
    """The conv2d keys with the defaults the README gives filled in, as a dict of ints."""
    k = {x: int(v) for x, v in keys.items() if x not in ("dt", "relu", "name") and v.lstrip("-").isdigit()}
    k.setdefault("sh", 1)
    k.setdefault("ph", 0)
    k.setdefault("g", 1)
    k.setdefault("dh", 1)
    k.setdefault("sw", k["sh"])
    k.setdefault("pw", k["ph"])
    k.setdefault("dw", k["dh"])
    k.setdefault("kw", k.get("kh", 1))
    k.setdefault("iw", k.get("ih", 1))
    return k


def _out(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def separable_blocks(cases):
    """(depthwise case, pointwise case, standard-conv shape, standard-conv MACs) per measured pair: a
    depthwise conv and a 1×1, g = 1, stride 1, unpadded conv on its output (as `layerbench run
    --separable-baseline` pairs them)."""
    dws = [c for c in cases if c.ok and c.type == "depthwise" and c.op == "conv2d"]
    pws = [c for c in cases if c.ok and c.type == "pointwise" and c.op == "conv2d"]
    pw_index = defaultdict(list)
    for p in pws:
        s = _conv_shape(parse_problem(p.problem)[1])
        if (s["sh"], s["sw"], s["ph"], s["pw"]) != (1, 1, 0, 0):
            continue
        pw_index[(s.get("mb"), s.get("ic"), s.get("ih"), s.get("iw"), p.dtype, p.relu, p.threads, p.cache,
                  p.blocking_sync, p.device)].append(p)
    out = []
    for d in dws:
        s = _conv_shape(parse_problem(d.problem)[1])
        try:
            oh = _out(s["ih"], s["kh"], s["sh"], s["ph"], s["dh"])
            ow = _out(s["iw"], s["kw"], s["sw"], s["pw"], s["dw"])
        except KeyError:
            continue
        for p in pw_index.get((s["mb"], s["oc"], oh, ow, d.dtype, d.relu, d.threads, d.cache, d.blocking_sync, d.device), []):
            oc = _conv_shape(parse_problem(p.problem)[1])["oc"]
            std = {"mb": s["mb"], "ic": s["ic"], "ih": s["ih"], "iw": s["iw"], "oc": oc, "kh": s["kh"], "kw": s["kw"],
                   "sh": s["sh"], "sw": s["sw"], "ph": s["ph"], "pw": s["pw"], "dh": s["dh"], "dw": s["dw"], "g": 1}
            macs = s["mb"] * oh * ow * oc * s["ic"] * s["kh"] * s["kw"]
            out.append((d, p, std, macs))
    return out


def _std_line(std, dtype):
    keys = {k: str(std[k]) for k in ("mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "ph", "g")}
    return print_problem("conv2d", keys | {"dt": dtype, "relu": "none"})


def _separable_verdict(time_ratio, mac_ratio):
    """Separable faster and its time saving smaller than its MAC saving → confirmed; faster by at
    least its MAC saving → depends; not faster → refuted."""
    return CONFIRMED if 1 > time_ratio > mac_ratio else REFUTED if time_ratio >= 1 else DEPENDS


def claim8(cases):
    title = "Depthwise-separable convolution is much cheaper than the standard convolution it replaces"
    blocks = separable_blocks([c for c in cases if c.relu == "none"])
    if not blocks:
        return Verdict(8, title, NOT_MEASURED, "not measured: needs a depthwise 3×3 and the pointwise 1×1 after it and "
                       "the standard convolution they replace (`layerbench run --network mobilenet_v1 "
                       "--separable-baseline`).")
    std_index = defaultdict(list)
    for c in cases:
        if c.ok and c.op == "conv2d" and c.relu == "none":
            s = _conv_shape(parse_problem(c.problem)[1])
            if s.get("g") == 1:
                std_index[(tuple(sorted(s.items())), c.dtype, c.threads, c.cache, c.blocking_sync, c.device)].append(c)
    table = Table([("block (depthwise → pointwise)", "block"), ("device", "device"), ("backend", "backend"),
                   ("dtype", "dtype"), ("batch", "batch"), ("threads", "threads"), ("MAC ratio", "mac_ratio"),
                   ("separable time", "separable_time_us"), ("standard time", "standard_time_us"),
                   ("time ratio", "time_ratio")],
                  right=[False, False, False, False, True, True, True, True, True, True])
    mac_ratio = {}  # block (standard shape, dtype, threads, cache, sync, device) -> separable ÷ standard MACs
    missing = {}  # (device, backend) -> a standard convolution not measured
    # (device, backend) -> [(MAC ratio, time ratio)], one per block: a pair at one shape, dtype, batch and threads
    per_backend = defaultdict(list)
    seen = set()
    for d, p, std, std_macs in blocks:
        mr = (d.value("lb_pred_macs") + p.value("lb_pred_macs")) / std_macs
        key = (tuple(sorted(std.items())), d.dtype, d.threads, d.cache, d.blocking_sync, d.device)
        mac_ratio[key] = mr
        stds = std_index.get(key, [])
        # The fastest kernel of each backend for each part.
        for backend in sorted({d.backend} & {p.backend}):
            ident = (key, backend)
            if ident in seen:
                continue
            seen.add(ident)
            dd = fastest([x for x, _, s2, _ in blocks if x.backend == backend and s2 == std and x.dtype == d.dtype
                          and x.threads == d.threads and x.device == d.device and x.cache == d.cache])
            pp = fastest([y for _, y, s2, _ in blocks if y.backend == backend and s2 == std and y.dtype == d.dtype
                          and y.threads == d.threads and y.device == d.device and y.cache == d.cache])
            ss = fastest([s for s in stds if s.backend == backend])
            threads = d.threads if d.device == "cpu" else None  # GPU rows have no threads
            name = f"{d.layer or 'dw'} → {p.layer or 'pw'}: {problem_without(_std_line(std, d.dtype), 'mb', 'dt', 'relu')}"
            if ss is None:
                missing.setdefault((d.device, backend), _std_line(std, d.dtype))
                table.add([name, d.device, backend, d.dtype, std["mb"], threads or "", fmt_num(mr, 3),
                           fmt_time(dd.time_us + pp.time_us), "—", "—"],
                          [name, d.device, backend, d.dtype, std["mb"], threads, mr, dd.time_us + pp.time_us, None, None])
                continue
            tr = (dd.time_us + pp.time_us) / ss.time_us
            per_backend[(d.device, backend)].append((mr, tr))
            table.add([name, d.device, backend, d.dtype, std["mb"], threads or "", fmt_num(mr, 3),
                       fmt_time(dd.time_us + pp.time_us), fmt_time(ss.time_us), fmt_num(tr, 3)],
                      [name, d.device, backend, d.dtype, std["mb"], threads, mr, dd.time_us + pp.time_us, ss.time_us, tr])
    lines = [f"MAC ratio separable ÷ standard (model): median {fmt_num(stats.median(list(mac_ratio.values())), 3)} over "
             f"{len(mac_ratio)} measured depthwise → pointwise block{'s' if len(mac_ratio) > 1 else ''} "
             "(1/oc + 1/(kh·kw) for stride 1)."]
    parts = []
    dev_ratio = {}
    for dev in ("cpu", "gpu"):
        backends = sorted({b for dv, b in list(per_backend) + list(missing) if dv == dev})
        xs = [x for b in backends for x in per_backend.get((dev, b), [])]
        if not xs:
            need = [line for (dv, _), line in missing.items() if dv == dev]
            lines.append(f"{dev.upper()} time not measured: needs " +
                         (f"the standard convolution (`layerbench run --separable-baseline`, e.g. "
                          f"`layerbench run --problem \"{need[0]}\"`)" if need else
                          (GPU_RUN if dev == "gpu" else "a CPU run of the depthwise and pointwise layers")) + ".")
            parts.append(NOT_MEASURED)
            continue
        tr = stats.median([t for _, t in xs])
        mr = stats.median([m for m, _ in xs])
        dev_ratio[dev] = tr
        faster = tr < 1
        lines.append(f"{dev.upper()}: separable takes {fmt_num(tr, 3)}× the standard convolution's time for "
                     f"{fmt_num(mr, 3)}× its MACs (median of {len(xs)} block × backend pairs): "
                     f"{'faster' if faster else 'not faster'}, and the time saving is "
                     f"{'smaller' if tr > mr else 'not smaller'} than the MAC saving.")
        # A verdict per backend: each has its own kernels for the three layers.
        for b in backends:
            bx = per_backend.get((dev, b))
            if not bx:
                lines.append(f"{dev.upper()}, {b}: not measured: needs the standard convolution (`layerbench run "
                             f"--separable-baseline`, e.g. `layerbench run --problem \"{missing[(dev, b)]}\"`).")
                parts.append(NOT_MEASURED)
                continue
            btr = stats.median([t for _, t in bx])
            bmr = stats.median([m for m, _ in bx])
            v = _separable_verdict(btr, bmr)
            parts.append(v)
            spread = (f"median of {len(bx)} blocks, time ratio {fmt_num(min(t for _, t in bx), 3)} to "
                      f"{fmt_num(max(t for _, t in bx), 3)}" if len(bx) > 1 else "1 block")
            lines.append(f"{dev.upper()}, {b}: separable takes {fmt_num(btr, 3)}× the time for {fmt_num(bmr, 3)}× "
                         f"the MACs ({spread}) → {v}.")
    if "cpu" in dev_ratio and "gpu" in dev_ratio:
        gpu_worse = dev_ratio["gpu"] > dev_ratio["cpu"]
        lines.append(f"GPU vs CPU: the time saving is {'smaller' if gpu_worse else 'not smaller'} on the GPU "
                     f"({fmt_num(dev_ratio['gpu'], 3)} vs {fmt_num(dev_ratio['cpu'], 3)}).")
        parts.append(CONFIRMED if gpu_worse else DEPENDS)
    summary = ("Each measured depthwise → pointwise pair against the standard convolution with the same input, output "
               "and filter (fastest kernel of each backend; `layerbench run --separable-baseline` adds it). Rule, per "
               "backend: separable faster and its time saving smaller than its MAC saving → confirmed; faster by at "
               "least the MAC saving → depends; not faster → refuted. Backends that disagree → depends.")
    return Verdict(8, title, _combine(parts), summary, lines, table)


def claim9(cases):
    groups = batch_groups(cases)
    if not groups:
        return Verdict(9, "Larger batch raises throughput with diminishing returns; each step takes longer", NOT_MEASURED,
                       "not measured: needs the same cases at ≥ 2 batch sizes (e.g. --batch 1,16,64).")
    raises = longer = 0
    gains_first, gains_last = [], []
    dimin = checked3 = 0
    per_type = defaultdict(list)
    for k, d in groups.items():
        bs = sorted(d)
        thr = [b * 1e6 / d[b].time_us for b in bs]  # samples per second
        if thr[-1] > thr[0]:
            raises += 1
        if d[bs[-1]].time_us > d[bs[0]].time_us:
            longer += 1
        per_type[d[bs[0]].type].append(thr[-1] / thr[0] if thr[0] else None)
        if len(bs) >= 3:
            checked3 += 1
            # Throughput gain per doubling of the batch, first step vs last step.
            g = [(thr[i + 1] / thr[i]) ** (1 / math.log2(bs[i + 1] / bs[i])) for i in range(len(bs) - 1)]
            gains_first.append(g[0])
            gains_last.append(g[-1])
            if g[-1] < g[0]:
                dimin += 1
    n = len(groups)
    lines = [f"{n} cases measured at ≥ 2 batch sizes: throughput (samples/s) higher at the largest batch in {raises}, "
             f"each step (one run) longer in {longer}."]
    for typ in sorted(per_type, key=type_rank):
        lines.append(f"{typ}: throughput at the largest vs the smallest batch, median {fmt_ratio(stats.median(per_type[typ]))}.")
    parts = [CONFIRMED if raises >= 2 * n / 3 and longer >= 2 * n / 3 else REFUTED if raises < n / 3 else DEPENDS]
    lines[0] = lines[0][:-1] + f" → {parts[0]}."
    if checked3:
        lines.append(f"{checked3} cases at ≥ 3 batch sizes: gain per doubling shrinks from the first to the last step in "
                     f"{dimin} (median first step {fmt_ratio(stats.median(gains_first))}, last step "
                     f"{fmt_ratio(stats.median(gains_last))})")
        parts.append(CONFIRMED if dimin >= 2 * checked3 / 3 else REFUTED if dimin < checked3 / 3 else DEPENDS)
        lines[-1] += f" → {parts[-1]}."
    else:
        lines.append("diminishing returns not measured: needs ≥ 3 batch sizes of the same case.")
        parts.append(NOT_MEASURED)
    summary = ("Throughput = batch ÷ time of one run. Rule: higher throughput and a longer step at the largest batch in "
               "≥ 2/3 of the cases, and a shrinking gain per doubling in ≥ 2/3 of those with ≥ 3 batch sizes → confirmed; "
               "higher throughput in < 1/3 → refuted; otherwise depends.")
    return Verdict(9, "Larger batch raises throughput with diminishing returns; each step takes longer", _combine(parts),
                   summary, lines)


def claim10(cases, cpu_gpu_rows):
    if not cpu_gpu_rows:
        has_gpu = any(c.ok and c.device == "gpu" for c in cases)
        need = ("the same problems on the CPU" if has_gpu else GPU_RUN + " of the same problems as a CPU run")
        return Verdict(10, "Small models lean on the CPU, large models on the device", NOT_MEASURED,
                       f"not measured: needs {need}.")
    table = Table([("layer type", "type"), ("problems", "problems"), ("CPU faster", "cpu_faster"),
                   ("largest MACs where the CPU is faster", "cpu_faster_max_macs"),
                   ("smallest MACs where the GPU is faster", "gpu_faster_min_macs"),
                   ("speed-up range", "speedup_range")], right=[False, True, True, True, True, True])
    by_type = defaultdict(list)
    for cpu, gpu in cpu_gpu_rows:
        by_type[cpu.type].append((cpu.value("lb_pred_macs") or 0, cpu.time_us / gpu.time_us))
    crossovers = always_gpu = always_cpu = 0
    for typ in sorted(by_type, key=type_rank):
        xs = by_type[typ]
        cpu_wins = [m for m, s in xs if s < 1]
        gpu_wins = [m for m, s in xs if s >= 1]
        if cpu_wins and gpu_wins:
            crossovers += 1 if min(cpu_wins) < max(gpu_wins) else 0
        elif gpu_wins:
            always_gpu += 1
        else:
            always_cpu += 1
        table.add([typ, len(xs), len(cpu_wins), fmt_num(max(cpu_wins) / 1e6) + " M" if cpu_wins else "—",
                   fmt_num(min(gpu_wins) / 1e6) + " M" if gpu_wins else "—",
                   f"{fmt_ratio(min(s for _, s in xs))} … {fmt_ratio(max(s for _, s in xs))}"],
                  [typ, len(xs), len(cpu_wins), max(cpu_wins) if cpu_wins else None, min(gpu_wins) if gpu_wins else None,
                   f"{min(s for _, s in xs):.3g}..{max(s for _, s in xs):.3g}"])
    n = len(by_type)
    verdict = CONFIRMED if crossovers >= 2 * n / 3 else REFUTED if crossovers == 0 else DEPENDS
    dev = [c for c in cases if c.ok and c.device == "gpu" and c.device_peak]
    lines = [f"{crossovers} of {n} layer types cross over (the CPU wins small problems, the GPU large ones); "
             f"{always_gpu} always faster on the GPU, {always_cpu} always on the CPU → {verdict}."]
    if dev:
        big = max(dev, key=lambda c: c.device_peak)
        lines.append(f"largest device peak: `{big.label}` {fmt_mb(big.device_peak)} MB.")
    summary = ("Fastest CPU vs fastest GPU kernel per problem and batch (f32 and every other dtype measured on both). "
               "Rule: a crossover in ≥ 2/3 of layer types → confirmed; in none → refuted; otherwise depends.")
    return Verdict(10, "Small models lean on the CPU, large models on the device", verdict, summary, lines, table)


def check_all(cases, network_analyses=(), network_rows=(), cpu_gpu_rows=()):
    return [claim1(cases), claim2(cases), claim3(cases), claim4(cases), claim5(cases, list(network_analyses)),
            claim6(cases), claim7(cases, list(network_rows)), claim8(cases), claim9(cases),
            claim10(cases, list(cpu_gpu_rows))]
