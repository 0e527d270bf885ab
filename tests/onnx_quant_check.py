#!/usr/bin/env python3
"""onnx_quant_check.py - models written by onnxruntime's own quantizer, imported by graphc and run
on the interpreter and the cpu backend, against onnxruntime (issue 34).

    python3 tests/onnx_quant_check.py --graphc build/graphc [--work DIR]

Models (random weights, built here with onnx.helper): an MLP and a two-conv CNN quantized with
onnxruntime.quantization.quantize_static (QDQ format, int8 per-channel weights, int8 activations,
calibrated on random data), and the MLP with quantize_dynamic (MatMulInteger +
DynamicQuantizeLinear). Each runs on fresh random inputs (the seed is printed; GRAPHC_TEST_SEED
sets it) through ONNX's reference evaluator (onnx.reference: the operators' specification) and
onnxruntime's CPU provider, graph optimizations off and on. graphc must equal the specification
within one quantization step of the output (max |y| / 127; measured: 0). The distances to
onnxruntime are printed, not judged: with optimizations off it computes the graph as written but
its DynamicQuantizeLinear leaves the specification now and then (seed 5: 0.47 steps, where graphc
and onnx.reference agree exactly), and its optimized run requantizes intermediate activations
in fused QLinear kernels (measured 2026-12-07, onnxruntime 1.32: 2 to 16 steps on the static
models). Prints one line per model and backend; exits 1 on any failure, 77 when onnx or
onnxruntime is missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

SEED = int(os.environ.get("GRAPHC_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
RNG = np.random.default_rng(SEED)


def save(nodes, inits, x_shape, y_shape, path):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))],
                          [numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, path)


def mlp(path, B=16, K=256, H=512, N=128):
    save([helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
          helper.make_node("Relu", ["hb"], ["a"]), helper.make_node("MatMul", ["a", "W2"], ["o"]),
          helper.make_node("Add", ["o", "b2"], ["y"])],
         {"W1": RNG.standard_normal((K, H)) * 0.05, "b1": RNG.standard_normal(H) * 0.1,
          "W2": RNG.standard_normal((H, N)) * 0.05, "b2": RNG.standard_normal(N) * 0.1}, (B, K), (B, N), path)
    return (B, K)


def cnn(path):
    save([helper.make_node("Conv", ["x", "W", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
          helper.make_node("Conv", ["r", "W2"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
         {"W": RNG.standard_normal((16, 3, 3, 3)) * 0.2, "b": RNG.standard_normal(16) * 0.1,
          "W2": RNG.standard_normal((8, 16, 3, 3)) * 0.1}, (2, 3, 16, 16), (2, 8, 8, 8), path)
    return (2, 3, 16, 16)


class Reader(CalibrationDataReader):
    def __init__(self, shape):
        self.it = iter([{"x": RNG.standard_normal(shape).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.it, None)


def run_ort(path, x, opt):
    so = ort.SessionOptions()
    if not opt:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", default="build/graphc")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    from safetensors.numpy import load_file, save_file
    w = a.work or tempfile.mkdtemp(prefix="graphc-quant-")
    p = lambda n: os.path.join(w, n)
    models = []
    shape = mlp(p("mlp.onnx"))
    quantize_static(p("mlp.onnx"), p("mlp_qdq.onnx"), Reader(shape), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, activation_type=QuantType.QInt8)
    models.append(("mlp static QDQ int8 per-channel", "mlp_qdq", shape))
    quantize_dynamic(p("mlp.onnx"), p("mlp_dyn.onnx"), weight_type=QuantType.QInt8)
    models.append(("mlp dynamic int8", "mlp_dyn", shape))
    shape = cnn(p("cnn.onnx"))
    quantize_static(p("cnn.onnx"), p("cnn_qdq.onnx"), Reader(shape), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8)
    models.append(("cnn static QDQ (u8 activations, int8 per-channel weights)", "cnn_qdq", shape))
    bad = 0
    for label, name, shape in models:
        x = RNG.standard_normal(shape).astype(np.float32)
        from onnx.reference import ReferenceEvaluator
        spec = ReferenceEvaluator(p(name + ".onnx")).run(None, {"x": x})[0]
        ref, ref_opt = run_ort(p(name + ".onnx"), x, False), run_ort(p(name + ".onnx"), x, True)
        step = float(np.abs(spec).max()) / 127
        r = subprocess.run([a.graphc, "import", p(name + ".onnx"), "-o", p(name + ".graph")], capture_output=True,
                           text=True)
        if r.returncode:
            print(f"FAIL {label}: import: {r.stderr.strip()[-400:]}")
            bad += 1
            continue
        save_file({"x": x}, p(name + ".in.safetensors"))
        for be in ("interp", "cpu"):
            out = p(f"{name}.{be}.safetensors")
            r = subprocess.run([a.graphc, "run", p(name + ".graph"), "--backend", be, "--inputs",
                                p(name + ".in.safetensors"), "--output", out], capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {label} on {be}: {r.stderr.strip()[-400:]}")
                bad += 1
                continue
            y = next(iter(load_file(out).values()))
            d = float(np.abs(y - spec).max()) / step
            d_ort, d_opt = float(np.abs(y - ref).max()) / step, float(np.abs(y - ref_opt).max()) / step
            ok = d <= 1
            bad += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {label} on {be}: {d:.3f} steps from onnx.reference; onnxruntime "
                  f"{d_ort:.3f} (no optimizations), {d_opt:.3f} (optimized)")
    print(f"onnx quantizer models: {'all passed' if not bad else f'{bad} failed'} (seed {SEED}, onnx "
          f"{onnx.__version__}, onnxruntime {ort.__version__})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
