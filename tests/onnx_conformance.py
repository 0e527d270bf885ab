#!/usr/bin/env python3
"""ONNX backend conformance for graphc: run the ONNX node tests through
`graphc run-onnx-test` and write docs/onnx.md.

The node tests come with the `onnx` Python package (python3 -m pip install onnx).
Older wheels ship them as folders under onnx/backend/test/data/node; newer ones
only ship the generators, so this script writes them out once (model.onnx and
test_data_set_0/{input,output}_N.pb, exactly as ONNX's own generate-data does)
into a cache folder.

Each test is imported, compiled for --backend and run; outputs are compared
with ONNX's tolerances (rtol 1e-3, atol 1e-7; exact for ints and bools).
Outcome per test, from the exit code of `graphc run-onnx-test`:
  0 passed; 3 excluded (graphc reports the model as unsupported: an op, a
  dtype, dynamic shapes, zero-sized tensors, ...); anything else failed.

usage: tests/onnx_conformance.py [--graphc PATH] [--backend interp|cpu|cuda|default]
           [--data DIR] [--only a,b,c] [--jobs N] [--doc docs/onnx.md | --no-doc]
           [--generate-only]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def find_graphc():
    for b in sorted(os.listdir(ROOT)):
        p = os.path.join(ROOT, b, "graphc")
        if b.startswith("build") and os.access(p, os.X_OK):
            return p
    return "graphc"


def write_case(case, out_dir):
    """Write one node test like onnx.backend.test.cmd_tools generate-data does."""
    from onnx import TensorProto, numpy_helper
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(out_dir, "test_data_set_%d" % i)
        os.makedirs(ds, exist_ok=True)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, v in enumerate(values):
                ty = infos[j].type if j < len(infos) else None
                if ty is not None and not ty.HasField("tensor_type"):
                    # sequences, maps, optionals: not tensors; graphc rejects the model
                    open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb").close()
                    continue
                t = v if isinstance(v, TensorProto) else numpy_helper.from_array(
                    v, infos[j].name if j < len(infos) else "")
                with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                    f.write(t.SerializeToString())


def node_test_dir(data):
    """Folder holding the node tests: the package's, or generated into `data`."""
    import onnx
    pkg = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(pkg) and any(n.startswith("test_") for n in os.listdir(pkg)):
        return pkg
    stamp = os.path.join(data, ".generated-onnx-" + onnx.__version__)
    if os.path.exists(stamp):
        return data
    print("writing the ONNX %s node tests to %s ..." % (onnx.__version__, data), file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.loader import load_node_model_tests
        cases = load_node_model_tests()
        for c in cases:
            write_case(c, os.path.join(data, c.name))
    open(stamp, "w").close()
    return data


def reason_of(stderr):
    """Short exclusion reason from graphc's error message."""
    text = " ".join(stderr.split())
    m = re.search(r"unsupported ONNX nodes?:(.*)", text)
    if m:
        ops = sorted(set(re.findall(r": ([A-Za-z0-9_]+) \(domain '([^']*)', opset (\d+)\): ([^:]*?)(?= node |$)", m.group(1))))
        parts = []
        for op, dom, ver, why in ops:
            d = "" if dom == "ai.onnx" else dom + ":"
            parts.append("%s%s" % (d, op) + (" (opset %s not mapped)" % ver if why.startswith("mapped") else ""))
        return "unsupported op: " + ", ".join(sorted(set(parts)))
    m = re.search(r"element type (\w+) is not supported", text)
    if m:
        return "unsupported dtype: " + m.group(1)
    if re.search(r"zero elements|zero-sized|empty|of size 0|leave nothing|split of size 0", text):
        return "zero-sized tensors"
    if re.search(r"must be a constant|dynamic|neither a size nor a name|symbolic", text):
        return "dynamic shapes or values"
    if re.search(r"is not a tensor", text):
        return "non-tensor values (sequence / map / optional)"
    m = re.search(r"error: (.*)", text)
    msg = m.group(1) if m else text
    op = re.match(r"node (?:'[^']*' )?\(?#\d+,? ?\(?([A-Za-z0-9_]+)\)?\)?: ", msg)
    msg = re.sub(r"^node [^:]*: ", "", msg)
    msg = re.sub(r"^not supported: ", "", msg)
    msg = re.sub(r" test_data_set_\d+: failed.*", "", msg)
    return ((op.group(1) + ": ") if op else "") + msg[:160]


def run_one(graphc, backend, d, timeout):
    try:
        p = subprocess.run([graphc, "run-onnx-test", d, "--backend", backend],
                           capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %ds" % timeout


def supported_ops():
    """(op, first opset, last opset) from the table in frontend/onnx_ops.c."""
    src = open(os.path.join(ROOT, "frontend", "onnx_ops.c")).read()
    table = src[src.index("static const ox_opdef defs[]"):]
    ops = []
    for m in re.finditer(r'(U|B|ACT|RED)\("(\w+)", \w+(?:, (\d+))?\)|\{"(\w+)", \w+, [^,]+, (\d+), (\d+)\}', table):
        if m.group(4):
            ops.append((m.group(4), int(m.group(5)), int(m.group(6))))
        else:
            kind, name, n = m.group(1), m.group(2), m.group(3)
            lo, hi = {"U": (1, 28), "B": (7, 28)}.get(kind, (1, 28))
            if kind == "ACT":
                lo = int(n)
            if kind == "RED":
                hi = int(n)
            ops.append((name, lo, hi))
    return sorted(ops)


def write_doc(path, backend, version, passed, failed, excluded, frozen):
    total = len(passed) + len(failed) + len(excluded)
    by_reason = {}
    for name, why in excluded:
        by_reason[why] = by_reason.get(why, 0) + 1
    L = []
    L.append("# ONNX import and conformance\n")
    L.append("`graphc import model.onnx -o model.graph` translates an ONNX model into a `.graph` file and a")
    L.append("safetensors weights file (`frontend/onnx*.c`, with a bounds-checked protobuf reader in")
    L.append("`frontend/protobuf.c`). `graphc run-onnx-test DIR` imports an ONNX backend test, compiles it,")
    L.append("runs it on `test_data_set_*/input_*.pb` and compares with `output_*.pb` (rtol 1e-3, atol 1e-7;")
    L.append("exact for integers and bools). `graphc run-pb FILE.graph --inputs-pb ... --expect-pb ...` does")
    L.append("the same for an existing `.graph`.\n")
    L.append("## What the importer does\n")
    L.append("- Opsets 1 to 28 of `ai.onnx`, per op within the versions whose semantics were mapped; other")
    L.append("  domains are unsupported. Every unsupported op of a model is listed in one error (status")
    L.append("  `GRAPHC_STATUS_UNSUPPORTED`) with node name, index, op type, domain and opset.")
    L.append("- Graph inputs become arguments; `dim_param` dims become symbolic dims of the graph (bind them")
    L.append("  with `--bind`). Initializers (raw data, typed fields, external data inside the model's")
    L.append("  folder: no absolute paths, no `..`, no symbolic links) become `param`s in the weights file.")
    L.append("- Inputs that ONNX passes as tensors but graphc takes as attributes (Reshape shape,")
    L.append("  Unsqueeze/Squeeze axes, Slice starts/ends/axes/steps, Pad pads, Reduce axes, Expand shape,")
    L.append("  Tile repeats, Split sizes, Clip bounds, ...) must be constants. Constants are folded at")
    L.append("  import with the folding pass's evaluator, so shape arithmetic (Shape, Gather, Concat, Cast, ...) on")
    L.append("  static shapes becomes attributes. Dynamic values fail with a message naming the node.")
    L.append("- Initializers become params, except one-element ones read by a node (the dynamo exporter's")
    L.append("  scalars: scales, eps, exponents), which are `const` ops so that the passes (`recognize`) can")
    L.append("  read them; a graph output that is an initializer stays a param. Constants made at import (Constant nodes, folded values)")
    L.append("  are written inline as `const` ops when uniform or of at most 16 elements, else as params.")
    L.append("  Dead ops are removed; the text is re-parsed and verified before it is written.")
    L.append("- `graphc run-onnx-test` gives the importer the test's input values: an input the model")
    L.append("  uses where graphc needs a constant (a Reshape shape fed as a graph input, Resize sizes,")
    L.append("  TopK's K, ...) is frozen to that value, and the test says so. Nothing else is frozen: the")
    L.append("  graph still computes everything from its inputs at run time.\n")
    ops = supported_ops()
    L.append("## Supported ops (%d)\n" % len(ops))
    L.append("Domain `ai.onnx`, with the opsets each mapping is written for; every op of a model must")
    L.append("be in this list. Types follow graphc's (f64 f32 f16 bf16 i64 i32 i8 u8 bool, and FLOAT8E4M3FN /")
    L.append("FLOAT8E5M2 / FLOAT8E4M3FNUZ / FLOAT8E5M2FNUZ as the storage dtypes f8e4m3 / f8e5m2 / f8e4m3fnuz /")
    L.append("f8e5m2fnuz; E8M0, 4-bit and 16-bit integers are not there); empty tensors (a zero dim) are; an op on a")
    L.append("type graphc lacks fails with the type named.\n")
    L.append(", ".join("%s (%d-%d)" % o for o in ops) + "\n")
    L.append("How some ops map (`frontend/onnx_*.c` has every detail):\n")
    L.append("- Elementwise ops map one to one; activations (HardSigmoid, Elu, Selu, Celu, Softplus,")
    L.append("  Mish, Swish, Shrink, ...) and Tan/Sinh/Cosh/Asinh/Acosh/Atanh/Atan/Asin/Acos are")
    L.append("  compositions (computed in f32 for f16/bf16 inputs). Round is half-to-even, Mod follows")
    L.append("  fmod=0/1, Sign/IsNaN/IsInf use comparisons, Max/Min/Sum/Mean chains.")
    L.append("- Gemm is matmul with transposes, alpha and beta; MatMul handles 1-D operands; Conv and")
    L.append("  pooling run 1-D as 2-D with a unit height; 3-D pooling is separable (an (H, W) pass and a")
    L.append("  D pass); dilated or ceil-mode-with-count_include_pad pooling uses one strided slice per")
    L.append("  kernel offset; ConvTranspose is a convolution of the zero-stuffed input with the flipped")
    L.append("  kernel; BatchNormalization (inference) folds into a per-channel scale and shift;")
    L.append("  InstanceNormalization and GroupNormalization use `layernorm`.")
    L.append("- Softmax/LogSoftmax/Hardmax before opset 13 flatten at `axis`; Reshape keeps ONNX's 0 and")
    L.append("  -1; Slice with negative steps, Pad in edge/reflect/wrap modes, Tile, GatherElements,")
    L.append("  GatherND, ReverseSequence, TopK (K rounds of argmax) and Scatter* (a match matrix, so")
    L.append("  O(N*M) work) are built from gather, iota, compare and select.")
    L.append("- Resize/Upsample are separable: per axis, the taps and weights of ONNX's reference")
    L.append("  (nearest, linear, cubic, antialias, every coordinate mode) as constant gathers and")
    L.append("  multiplies, computed in f64 like the reference. Attention follows the reference step")
    L.append("  by step (masks, causal offset, sliding window, GQA, softcap, past key/value).")
    L.append("- Quantization (`frontend/onnx_quant.c`) follows the reference step by step with exact")
    L.append("  graphc ops: QuantizeLinear is x / scale, round half to even, + zero point and clip in f64,")
    L.append("  cast to i8/u8 (fp8: a cast with `saturate`); DequantizeLinear (x - zero point) * scale in")
    L.append("  f32; scales and zero points per tensor, per axis or blocked (`block_size`); DynamicQuantize-")
    L.append("  Linear in f32; MatMulInteger/QLinearMatMul matmul in i32, ConvInteger/QLinearConv convolve")
    L.append("  in f64 (integer sums exact below 2^53), requantization in f64 as the reference. Errors: a")
    L.append("  scale or zero point whose shape does not fit `axis`/`block_size`, a zero or non-finite")
    L.append("  constant quantization scale, a non-zero fp8 zero point. Cast/CastLike honour `saturate`.\n")
    L.append("## Conformance (ONNX %s node tests, backend `%s`)\n" % (version, backend))
    L.append("Regenerate with `python3 tests/onnx_conformance.py --backend %s` (the node tests are" % backend)
    L.append("written out from the installed `onnx` package first). A test passes when every output")
    L.append("matches within ONNX's tolerances (rtol 1e-3, atol 1e-7 for floats, exact otherwise). It is")
    L.append("*excluded* when graphc reports the model as unsupported (exit code 3 of")
    L.append("`graphc run-onnx-test`), with graphc's reason; everything else is a failure.\n")
    L.append("| outcome | tests |")
    L.append("|---------|-------|")
    L.append("| passed | %d |" % len(passed))
    L.append("| of which with inputs frozen (see below) | %d |" % len(frozen))
    L.append("| failed | %d |" % len(failed))
    L.append("| excluded (unsupported) | %d |" % len(excluded))
    L.append("| total | %d |\n" % total)
    L.append("Exclusions by reason:\n")
    L.append("| reason | tests |")
    L.append("|--------|-------|")
    for k, v in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0])):
        L.append("| %s | %d |" % (k.replace("|", "\\|"), v))
    L.append("")
    L.append("### Failed\n")
    L.append("The bf16 Attention tests differ from the expected data by one bf16 ulp in some")
    L.append("elements: ONNX's tolerance (rtol 1e-3) is tighter than a bf16 ulp (2^-8 relative), and the")
    L.append("reference rounds intermediates differently. The `_expanded` fp16/bf16 graphs are computed")
    L.append("op by op in their own type, exactly as written, which the expected data (made with the")
    L.append("fused op) does not match to that tolerance either.\n")
    if failed:
        L.append("| test | first message |")
        L.append("|------|---------------|")
        for name, why in failed:
            L.append("| %s | %s |" % (name, why.replace("|", "\\|")))
    else:
        L.append("None.")
    L.append("\n### Passed\n")
    L.append("A `*` marks a test whose graph inputs are used as shapes, axes, pads, sizes or")
    L.append("other values graphc needs at compile time; `run-onnx-test` freezes those inputs to the")
    L.append("test data's values (graphc has no dynamic shapes), so the graph is checked for that value.\n")
    L.append(", ".join("`%s`%s" % (n, "*" if n in frozen else "") for n in passed) + "\n")
    L.append("### Excluded\n")
    L.append("| test | reason |")
    L.append("|------|--------|")
    for name, why in excluded:
        L.append("| %s | %s |" % (name, why.replace("|", "\\|")))
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def first_line(out, err):
    for line in (err + "\n" + out).splitlines():
        s = line.strip()
        if s and not s.startswith("ok"):
            return s[:200]
    return "failed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", default=None)
    ap.add_argument("--backend", default="interp")
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "graphc-onnx-node-tests"))
    ap.add_argument("--only", default=None, help="comma-separated test names")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "onnx.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--generate-only", action="store_true", help="write the tests, print their folder")
    a = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("onnx_conformance: the onnx package is not installed (python3 -m pip install onnx)",
              file=sys.stderr)
        return 77
    tests_dir = node_test_dir(a.data)
    if a.generate_only:
        print(tests_dir)
        return 0
    graphc = a.graphc or find_graphc()
    names = sorted(n for n in os.listdir(tests_dir) if n.startswith("test_")
                   and os.path.isdir(os.path.join(tests_dir, n)))
    if a.only:
        want = set(a.only.split(","))
        missing = want - set(names)
        if missing:
            print("onnx_conformance: no such tests: " + ", ".join(sorted(missing)), file=sys.stderr)
            return 1
        names = [n for n in names if n in want]
    passed, failed, excluded, frozen = [], [], [], set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {n: ex.submit(run_one, graphc, a.backend, os.path.join(tests_dir, n), a.timeout) for n in names}
        for n in names:
            rc, out, err = futs[n].result()
            if rc == 0:
                passed.append(n)
                if "frozen" in out:
                    frozen.add(n)
            elif rc == 3:
                excluded.append((n, reason_of(err)))
            else:
                failed.append((n, first_line(out, err)))
                print("FAIL %s: %s" % (n, failed[-1][1]), file=sys.stderr)
    print("passed: %d (%d with inputs frozen)  failed: %d  excluded: %d  (of %d, backend %s)" %
          (len(passed), len(frozen), len(failed), len(excluded), len(names), a.backend))
    if not a.no_doc and not a.only:
        write_doc(a.doc, a.backend, onnx.__version__, passed, failed, excluded, frozen)
        print("wrote " + a.doc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
