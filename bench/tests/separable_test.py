#!/usr/bin/env python3
"""`layerbench run --separable-baseline`: after each depthwise → pointwise pair of a network or
suite, the standard convolution the pair replaces (same input, output and filter, g=1, relu
none) is swept once per shape, and the report's claim 8 gives a verdict for every CPU backend
a tiny real run measured.

usage: separable_test.py path/to/layerbench
"""
import os
import re
import subprocess
import sys
import tempfile

LB = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from lbreport import claims, results  # noqa: E402

failures = []


def run(*args, expect=0):
    p = subprocess.run([LB, *args], capture_output=True, text=True)
    if p.returncode != expect:
        failures.append(f"{' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


def listed(*args):
    return [line.partition("  unsupported: ")[0] for line in run("run", "--list", *args).stdout.splitlines()]


def standard(names):
    return sorted({n for n in names if "_standard-" in n})


# mobilenet_v1: one standard convolution per distinct block shape (dw9..dw12 repeat dw8's),
# at every batch, at relu none only whatever the ReLU axis, and only with the flag.
sweep = ["--network", "mobilenet_v1", "--backend", "ref", "--dtype", "f32", "--relu", "all"]
with_flag = listed(*sweep, "--batch", "1,2", "--separable-baseline")
blocks = ["dw2.pw2", "dw3.pw3", "dw4.pw4", "dw5.pw5", "dw6.pw6", "dw7.pw7", "dw8.pw8", "dw13.pw13", "dw14.pw14"]
want = sorted(f"conv2d.ref.naive/f32/{b}_standard-mb{mb}/threads:1" for b in blocks for mb in (1, 2))
check(standard(with_flag) == want, f"standard convolutions listed: {standard(with_flag)}, expected {want}")
without = listed(*sweep, "--batch", "1,2")
check(standard(without) == [], f"standard convolutions without --separable-baseline: {standard(without)}")
check(sorted(set(with_flag) - set(without)) == want, "--separable-baseline changed more than the added cases")
# Each follows its pair (the network's order, so a shard or a resume sees them where they belong).
last = "conv2d.ref.naive/f32/dw14.pw14_standard-mb1/threads:1"
i = with_flag.index(last) if last in with_flag else 0
check(i > 0 and "/pw14-mb" in with_flag[i - 1], f"{last} not right after pw14: {with_flag[max(i - 1, 0)]}")

# The shapes: the depthwise's input and filter, the pointwise's oc, g=1 (check prints the
# problem lines; --max-macs 1 runs none of them).
out = run("check", "--network", "mobilenet_v1", "--separable-baseline", "--backend", "ref", "--batch", "3",
          "--max-macs", "1").stdout
for line in ("conv2d mb=3 ic=1024 ih=7 iw=7 oc=1024 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=none name=dw14.pw14_standard",
             "conv2d mb=3 ic=64 ih=112 iw=112 oc=128 kh=3 kw=3 sh=2 ph=1 g=1 dt=f32 relu=none name=dw3.pw3_standard"):
    check(line in out, f"check --separable-baseline does not list '{line}':\n{out[-1500:]}")

with tempfile.TemporaryDirectory() as tmp:
    # A pair in a suite; the standard convolution already there (under another name, at relu
    # none) is not added again; a 1x1 with stride 2 or after a non-depthwise conv is no pair.
    suite = os.path.join(tmp, "pairs.txt")
    with open(suite, "w") as f:
        f.write("conv2d mb=1 ic=16 ih=14 iw=14 oc=16 kh=3 kw=3 ph=1 g=16 name=dw\n"
                "conv2d mb=1 ic=16 ih=14 iw=14 oc=32 kh=1 kw=1 name=pw\n"
                "conv2d mb=1 ic=8 ih=14 iw=14 oc=8 kh=5 kw=5 ph=2 g=8 name=dwb\n"
                "conv2d mb=1 ic=8 ih=14 iw=14 oc=8 kh=1 kw=1 sh=2 name=strided\n"
                "conv2d mb=1 ic=8 ih=14 iw=14 oc=8 kh=3 kw=3 ph=1 name=plain\n"
                "conv2d mb=1 ic=8 ih=14 iw=14 oc=16 kh=1 kw=1 name=pwc\n")
    got = standard(listed("--suite", suite, "--backend", "ref", "--separable-baseline"))
    check(got == ["conv2d.ref.naive/f32/dw.pw_standard-mb1/threads:1"], f"suite pairs: {got}")
    with open(suite, "a") as f:
        f.write("conv2d mb=1 ic=16 ih=14 iw=14 oc=32 kh=3 kw=3 ph=1 name=already\n")
    got = standard(listed("--suite", suite, "--backend", "ref", "--separable-baseline"))
    check(got == [], f"a standard convolution the suite has was added again: {got}")

    # A tiny real run on the CPU backends built: claim 8 has a verdict, with its numbers,
    # for each of them.
    built = run("list").stdout.splitlines()[0].split(":")[1].split()
    backends = [b for b in ("cpu", "onednn", "eigen") if b in built]
    pair = os.path.join(tmp, "pair.txt")
    with open(pair, "w") as f:
        f.write("conv2d mb=1 ic=16 ih=14 iw=14 oc=16 kh=3 kw=3 ph=1 g=16 name=dw\n"
                "conv2d mb=1 ic=16 ih=14 iw=14 oc=32 kh=1 kw=1 name=pw\n")
    out = os.path.join(tmp, "pair.json")
    # Exit 1 says a kernel failed its verification (other tests' business): that backend then
    # has no verdict, the others still must.
    p = subprocess.run([LB, "run", "--suite", pair, "--separable-baseline", "--backend", ",".join(backends), "--batch", "1",
        "--relu", "none,fused", "--benchmark_min_time=0.002", "--repetitions", "2,3", "--case-time", "0.05",
        "--out", out], capture_output=True, text=True)
    check(p.returncode in (0, 1), f"the run: exit {p.returncode}\n{p.stderr[-2000:]}")
    if os.path.exists(out):
        cases = results.all_cases(results.load_many([out], lambda *a: failures.append(f"loading {out}: {a}")))
        std = [c for c in cases if c.layer == "dw.pw_standard"]
        check(std and all(c.relu == "none" for c in std), "the standard convolution was not measured at relu none only")
        v = claims.claim8(cases)
        check(v.verdict in (claims.CONFIRMED, claims.REFUTED, claims.DEPENDS), f"claim 8: {v.verdict}: {v.lines}")
        measured = [b for b in backends if all(any(c.ok and c.backend == b and c.layer == layer for c in cases)
                                                for layer in ("dw", "pw", "dw.pw_standard"))]
        check(measured, f"no backend measured the pair and its standard convolution: {backends}")
        for b in measured:
            check(any(re.match(rf"CPU, {b}: separable takes [0-9.]+× the time for [0-9.]+× the MACs .* → "
                               r"(confirmed|refuted|depends)\.", line) for line in v.lines),
                  f"claim 8 has no verdict for {b}: {v.lines}")
        rows = v.table.markdown() if v.table else ""
        check(all(f"| cpu | {b} | f32 | 1 | 1 | 0.142 |" in rows for b in measured), f"claim 8's table:\n{rows}")
    else:
        failures.append(f"the run wrote no {out}")

if failures:
    print("FAIL:\n" + "\n".join(failures))
    sys.exit(1)
print("separable baseline: listed, deduplicated, measured and judged")
