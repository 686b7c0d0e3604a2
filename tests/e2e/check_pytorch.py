"""tests/e2e/check_pytorch.py MODULE.py LOGITS.npz PARAMS [MODULE2.py LOGITS2.npz PARAMS2 ...]

Checks one `nas export --format pytorch` module against nas: the file's
first two lines are the usage note; importing it, building TinyNetwork()
and loading the .npz next to it with load_state_dict (strict: every
state_dict key present, no extra key) works without nas; the parameter
count equals PARAMS (what nas reports); in eval mode its logits on the
images in LOGITS.npz (from `nas export --logits`) match nas's within
NAS_TOL (environment; default 1e-4, max absolute difference, fp32). Exit 0 ok, 1 mismatch, 77
when torch or numpy is missing (run with Debian's /usr/bin/python3).
"""
import importlib.util
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - environment check
    print("SKIP: %s (install python3-torch)" % e)
    sys.exit(77)


def check(py, logits_path, want_params, tol):
    with open(py) as f:
        head = [f.readline(), f.readline()]
    assert all(line.startswith("#") for line in head), "no two-line usage note at the top"
    assert "load_state_dict" in "".join(head), "usage note does not say how to load weights"
    name = "exported_%d" % abs(hash(py))
    spec = importlib.util.spec_from_file_location(name, py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.set_num_threads(1)
    # a chain network (issue 15) exports ChainNetwork, a cell one TinyNetwork
    model = (getattr(mod, "ChainNetwork", None) or mod.TinyNetwork)()
    weights = os.path.splitext(py)[0] + ".npz"
    missing = model.load_state_dict(mod.load_weights(weights), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    model.eval()
    n = sum(p.numel() for p in model.parameters())
    ref = np.load(logits_path)
    with torch.no_grad():
        got = model(torch.from_numpy(ref["images"])).numpy()
    want = ref["logits"]
    diff = float(np.max(np.abs(got - want)))
    print("%s: %d parameters (nas: %d); PyTorch vs nas max |diff| %.3g (max |logit| %.3g)"
          % (py, n, want_params, diff, float(np.max(np.abs(want)))))
    if n != want_params:
        print("FAIL: parameter count %d != %d" % (n, want_params))
        return 1
    if got.shape != want.shape or not np.all(np.isfinite(got)) or diff > tol:
        print("FAIL: logits differ by %.3g > %g" % (diff, tol))
        return 1
    return 0


def over_cases(doc, arity, check_one):
    """Exit status of check_one(*case) over the command line's cases of
    `arity` arguments each (0 ok, 1 a mismatch, 2 usage: prints doc)."""
    args = sys.argv[1:]
    if not args or len(args) % arity:
        print(doc)
        return 2
    torch.set_num_threads(1)
    bad = 0
    for i in range(0, len(args), arity):
        bad += check_one(*args[i:i + arity])
    return 1 if bad else 0


def main():
    tol = float(os.environ.get("NAS_TOL", "1e-4"))
    return over_cases(__doc__, 3, lambda py, lg, n: check(py, lg, int(n), tol))


if __name__ == "__main__":
    sys.exit(main())
