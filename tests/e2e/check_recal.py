"""tests/e2e/check_recal.py PRE.py POST.npz RECAL.npz LOGITS.npz [... 4 more per case]

Issue 30: nas's BN recalibration (nas_net_bn_recalibrate) against PyTorch's.
PRE.py (+ PRE.npz) is a `nas export --format pytorch` module with the
weights and BN statistics of training; RECAL.npz holds "images" and
"batch" (the batch size): the images nas recalibrated on, in order. Here
every BatchNorm2d gets momentum=None and reset_running_stats(), the model
runs them in train mode batch by batch without gradients (PyTorch's
cumulative average: the mean of the batch means and of the unbiased batch
variances), and then
  - its running_mean / running_var must equal POST.npz's (nas's after
    recalibration) within NAS_TOL_STATS (default 1e-4, relative to 1 + |v|);
  - its eval logits on LOGITS.npz's images must equal nas's within NAS_TOL
    (default 2e-4), and differ from PRE's eval logits (or recalibration
    would be vacuous).
Exit 0 ok, 1 mismatch, 2 usage, 77 without torch or numpy (run with
Debian's /usr/bin/python3).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_pytorch  # noqa: E402  (over_cases: the command line)


def load(py):
    spec = importlib.util.spec_from_file_location("recal_%d" % abs(hash(py)), py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = (getattr(mod, "ChainNetwork", None) or mod.TinyNetwork)()
    model.load_state_dict(mod.load_weights(os.path.splitext(py)[0] + ".npz"), strict=True)
    return model


def check(pre_py, post_npz, recal_npz, logits_npz, tol, tol_stats):
    model = load(pre_py)
    model.eval()
    ref = np.load(logits_npz)
    images = torch.from_numpy(ref["images"])
    with torch.no_grad():
        before = model(images).numpy()
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in bns:
        m.momentum = None
        m.reset_running_stats()
    rc = np.load(recal_npz)
    x, batch = rc["images"], int(rc["batch"])
    model.train()
    with torch.no_grad():
        for first in range(0, x.shape[0], batch):
            model(torch.from_numpy(x[first:first + batch]))
    model.eval()
    post = np.load(post_npz)
    worst = 0.0
    for name, v in model.state_dict().items():
        if name.endswith(".running_mean") or name.endswith(".running_var"):
            want = post[name]
            worst = max(worst, float(np.max(np.abs(v.numpy() - want) / (1 + np.abs(want)))))
    with torch.no_grad():
        got = model(images).numpy()
    want = ref["logits"]
    diff = float(np.max(np.abs(got - want)))
    moved = float(np.max(np.abs(before - want)))
    print("%s: %d BN layers; statistics max rel diff %.3g; logits PyTorch vs nas max |diff| %.3g; "
          "recalibration moved them by %.3g" % (pre_py, len(bns), worst, diff, moved))
    bad = 0
    if not bns or worst > tol_stats:
        print("FAIL: running statistics differ by %.3g > %g" % (worst, tol_stats))
        bad = 1
    if not np.all(np.isfinite(got)) or diff > tol:
        print("FAIL: logits differ by %.3g > %g" % (diff, tol))
        bad = 1
    if moved < 100 * tol:
        print("FAIL: recalibration changed the logits by only %.3g" % moved)
        bad = 1
    return bad


def main():
    tol = float(os.environ.get("NAS_TOL", "2e-4"))
    tol_stats = float(os.environ.get("NAS_TOL_STATS", "1e-4"))
    return check_pytorch.over_cases(
        __doc__, 4, lambda pre, post, recal, lg: check(pre, post, recal, lg, tol, tol_stats))

if __name__ == "__main__":
    sys.exit(main())
