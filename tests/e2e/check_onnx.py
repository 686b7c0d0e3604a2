"""tests/e2e/check_onnx.py MODEL.onnx LOGITS.npz [MODEL2.onnx LOGITS2.npz ...]

Checks one `nas export --format onnx` model against nas's own forward pass:
onnx.checker (full check) accepts it, OpenCV's dnn module
(cv2.dnn.readNetFromONNX) loads it, and its logits on the images stored in
LOGITS.npz (written by `nas export --logits`) match nas's logits there
within NAS_TOL (environment; default 1e-4, max absolute difference, fp32). Prints the
difference and the op types in the graph. Exit 0 ok, 1 mismatch, 77 when
onnx, cv2 or numpy is missing (run with Debian's /usr/bin/python3).
"""
import sys

try:
    import numpy as np
    import onnx
    import cv2
except ImportError as e:  # pragma: no cover - environment check
    print("SKIP: %s (install python3-onnx python3-opencv)" % e)
    sys.exit(77)


def check(model_path, logits_path, tol):
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    assert opset == [13], "opset %s, expected [13]" % opset
    ops = sorted({n.op_type for n in model.graph.node})
    for n in model.graph.node:
        if n.op_type == "AveragePool":
            attrs = {a.name: a for a in n.attribute}
            assert attrs["count_include_pad"].i == 0, n.name
    ref = np.load(logits_path)
    images, want = ref["images"], ref["logits"]
    net = cv2.dnn.readNetFromONNX(model_path)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    net.setInput(np.ascontiguousarray(images, dtype=np.float32))
    got = net.forward()
    assert got.shape == want.shape, "OpenCV logits %s, nas %s" % (got.shape, want.shape)
    diff = float(np.max(np.abs(got - want)))
    scale = float(np.max(np.abs(want)))
    print("%s: ops %s; OpenCV vs nas max |diff| %.3g (max |logit| %.3g, %d images)"
          % (model_path, ",".join(ops), diff, scale, images.shape[0]))
    if not np.all(np.isfinite(got)) or diff > tol:
        print("FAIL: logits differ by %.3g > %g" % (diff, tol))
        return 1
    return 0


def main():
    import os
    tol = float(os.environ.get("NAS_TOL", "1e-4"))
    args = sys.argv[1:]
    if not args or len(args) % 2:
        print(__doc__)
        return 2
    bad = 0
    for i in range(0, len(args), 2):
        bad += check(args[i], args[i + 1], tol)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
