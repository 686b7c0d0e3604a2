"""tests/e2e/onnx_numpy.py MODEL.onnx LOGITS.npz [MODEL2.onnx LOGITS2.npz ...]

Runs a `nas export --format onnx` model with a small float64 numpy
interpreter of the ONNX operators nas writes (Conv with group and pads,
BatchNormalization, Relu, HardSigmoid, Sigmoid, Mul, Add, AveragePool
without padding in the divisor, GlobalAveragePool, Flatten, Gemm; ONNX
opset 13 semantics) and compares its logits on the images of LOGITS.npz
(`nas export --logits`) with nas's, within NAS_TOL (default 1e-4, max
absolute difference). For models OpenCV 4.6 cannot run correctly: it
computes squeeze-and-excitation blocks wrongly (a Mul of [N,C,H,W] by an
[N,C,1,1] gate), so check_onnx.py is not enough for them. Exit 0 ok,
1 mismatch or unknown operator, 77 when onnx or numpy is missing.
"""
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover - environment check
    print("SKIP: %s (install python3-onnx python3-numpy)" % e)
    sys.exit(77)


def conv(x, w, b, strides, pads, group):
    k, cg, r, s = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (x.shape[2] - r) // strides[0] + 1
    wo = (x.shape[3] - s) // strides[1] + 1
    y = np.zeros((x.shape[0], k, ho, wo))
    kg = k // group
    for g in range(group):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                patch = xs[:, :, i:i + strides[0] * ho:strides[0], j:j + strides[1] * wo:strides[1]]
                y[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, ws[:, :, i, j])
    return y if b is None else y + b[None, :, None, None]


def avgpool(x, k, strides, pads):
    """count_include_pad = 0: each window's mean over its real pixels."""
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ones = np.pad(np.ones(x.shape[2:]), ((pads[0], pads[2]), (pads[1], pads[3])))
    ho = (padded.shape[2] - k[0]) // strides[0] + 1
    wo = (padded.shape[3] - k[1]) // strides[1] + 1
    s = np.zeros(x.shape[:2] + (ho, wo))
    cnt = np.zeros((ho, wo))
    for i in range(k[0]):
        for j in range(k[1]):
            s += padded[:, :, i:i + strides[0] * ho:strides[0], j:j + strides[1] * wo:strides[1]]
            cnt += ones[i:i + strides[0] * ho:strides[0], j:j + strides[1] * wo:strides[1]]
    return s / cnt


def bn(x, g, b, mu, v, eps):
    c = (None, slice(None), None, None)
    return (x - mu[c]) / np.sqrt(v[c] + eps) * g[c] + b[c]


def run(model, images):
    env = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    env[model.graph.input[0].name] = images.astype(np.float64)
    for nd in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in nd.attribute}
        i = [env[x] if x else None for x in nd.input]
        t = nd.op_type
        if t == "Conv":
            o = conv(i[0], i[1], i[2] if len(i) > 2 else None, a.get("strides", [1, 1]),
                     a.get("pads", [0, 0, 0, 0]), a.get("group", 1))
        elif t == "BatchNormalization":
            o = bn(*i[:5], a.get("epsilon", 1e-5))
        elif t == "Relu":
            o = np.maximum(i[0], 0)
        elif t == "HardSigmoid":
            o = np.clip(a.get("alpha", 0.2) * i[0] + a.get("beta", 0.5), 0, 1)
        elif t == "Sigmoid":
            o = 1 / (1 + np.exp(-i[0]))
        elif t == "Mul":
            o = i[0] * i[1]
        elif t == "Add":
            o = i[0] + i[1]
        elif t == "AveragePool":
            assert a.get("count_include_pad", 0) == 0, nd.name
            o = avgpool(i[0], a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0]))
        elif t == "GlobalAveragePool":
            o = i[0].mean(axis=(2, 3), keepdims=True)
        elif t == "Flatten":
            o = i[0].reshape(i[0].shape[0], -1)
        elif t == "Gemm":
            o = i[0] @ (i[1].T if a.get("transB", 0) else i[1]) + i[2]
        else:
            raise ValueError("operator %s (node %s) is not interpreted" % (t, nd.name))
        env[nd.output[0]] = o
    return env[model.graph.output[0].name]


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        print(__doc__.splitlines()[0])
        return 1
    tol = float(os.environ.get("NAS_TOL", "1e-4"))
    bad = 0
    for model_path, logits_path in zip(args[0::2], args[1::2]):
        ref = np.load(logits_path)
        try:
            got = run(onnx.load(model_path), ref["images"])
        except ValueError as e:
            print("FAIL: %s: %s" % (model_path, e))
            bad += 1
            continue
        diff = float(np.max(np.abs(got - ref["logits"])))
        print("%s: numpy ONNX interpreter vs nas max |diff| %.3g (max |logit| %.3g)"
              % (model_path, diff, float(np.max(np.abs(ref["logits"])))))
        if not diff <= tol:
            print("FAIL: logits differ by %.3g > %g" % (diff, tol))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
