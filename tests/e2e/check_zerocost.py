"""tests/e2e/check_zerocost.py MODULE.py DATA.npz [MODULE2.py DATA2.npz ...]

Recomputes nas's zero-cost proxies (include/nas/zerocost.h) in PyTorch,
float64, from the papers' definitions, on the weights of a `nas export
--format pytorch` module (MODULE.npz) and the batch in DATA.npz (images,
labels), and compares them with nas's scores (relative tolerance 1e-3; naswot
absolute 1e-3 on log|det K|) (DATA.npz "scores", in the
order synflow, naswot, snip, grad_norm, jacob_cov, params, macs; macs is not
recomputed). Weight layers: every nn.Conv2d and nn.Linear. Dropout is
off in every proxy, as in nas.

  synflow   (Tanaka et al. 2020; Abdelfattah et al. 2021, NAS-Bench-201
            setting) BatchNorm2d replaced by identity, every state_dict
            tensor by its absolute value, input all ones of batch 1,
            R = sum of the logits: sum over weights of |w * dR/dw|
  naswot    (Mellor et al. 2021) train-mode forward; for every ReLU
            application (nn.ReLU modules and the functional one inside SE)
            the codes x > 0 of its input, K = sum c c^T + (1-c)(1-c)^T,
            score log|det K|
  snip      train-mode forward, mean cross-entropy L: sum |w * dL/dw|
  grad_norm the same backward: sum over weight layers of ||dL/dw||_2
  jacob_cov (Mellor et al. 2020, arXiv v1) train-mode forward, backward
            of the sum of the logits, J = dR/dx per image, C = corrcoef(J),
            score -sum(log(l + 1e-5) + 1/(l + 1e-5)) over C's eigenvalues l
  params    number of parameters

Exit 0 ok, 1 mismatch, 77 when torch or numpy is missing.
"""
import copy
import importlib.util
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:  # pragma: no cover - environment check
    print("SKIP: %s (install python3-torch)" % e)
    sys.exit(77)

NAMES = ["synflow", "naswot", "snip", "grad_norm", "jacob_cov", "params"]


def load(py):
    spec = importlib.util.spec_from_file_location("zc_%d" % abs(hash(py)), py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = (getattr(mod, "ChainNetwork", None) or mod.TinyNetwork)()
    model.load_state_dict(mod.load_weights(os.path.splitext(py)[0] + ".npz"), strict=True)
    return model.double()


def weight_layers(model):
    return [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


class NoDropout:
    """nn.functional.dropout (the export's, following self.training) off."""

    def __enter__(self):
        self.orig = nn.functional.dropout
        nn.functional.dropout = lambda h, p=0.5, training=True, inplace=False: h

    def __exit__(self, *a):
        nn.functional.dropout = self.orig


def no_bn(model):
    """Every BatchNorm2d replaced by identity, also in ChainNetwork's list."""
    for m in list(model.modules()):
        for cname, c in list(m.named_children()):
            if isinstance(c, nn.BatchNorm2d):
                setattr(m, cname, nn.Identity())
    paths = getattr(model, "paths", None)
    if paths is not None:
        model.paths = [nn.Identity() if isinstance(m, nn.BatchNorm2d) else m for m in paths]


def synflow(model):
    model = copy.deepcopy(model)
    no_bn(model)
    with torch.no_grad():
        for t in model.state_dict().values():
            t.abs_()
    model.eval()
    first = next(m for m in model.modules() if isinstance(m, nn.Conv2d))
    x = torch.ones(1, first.in_channels, *IMG_HW, dtype=torch.float64)
    model.zero_grad()
    model(x).sum().backward()
    return sum(float((m.weight * m.weight.grad).abs().sum()) for m in weight_layers(model))


def grads(model, x, y):
    model = copy.deepcopy(model)
    model.train()
    model.zero_grad()
    with NoDropout():
        nn.functional.cross_entropy(model(x), y).backward()
    layers = weight_layers(model)
    snip = sum(float((m.weight * m.weight.grad).abs().sum()) for m in layers)
    norm = sum(float(m.weight.grad.norm()) for m in layers)
    return snip, norm


def jacob_cov(model, x):
    model = copy.deepcopy(model)
    model.train()
    x = x.clone().requires_grad_(True)
    with NoDropout():
        model(x).sum().backward()
    j = x.grad.reshape(x.shape[0], -1).numpy()
    v = np.linalg.eigvalsh(np.corrcoef(j))
    return float(-np.sum(np.log(v + 1e-5) + 1.0 / (v + 1e-5)))


def naswot(model, x):
    model = copy.deepcopy(model)
    model.train()
    b = x.shape[0]
    k = torch.zeros(b, b, dtype=torch.float64)
    orig = torch.relu
    count = [0]

    def relu(t):
        c = (t.detach().reshape(b, -1) > 0).double()
        k.add_(c @ c.t() + (1 - c) @ (1 - c).t())
        count[0] += 1
        return orig(t)

    torch.relu = relu  # nn.ReLU reaches it through F.relu; SE calls it directly
    try:
        with torch.no_grad(), NoDropout():
            model(x)
    finally:
        torch.relu = orig
    return float(torch.slogdet(k)[1]), count[0]


def main(argv):
    global IMG_HW
    status = 0
    for py, data in zip(argv[0::2], argv[1::2]):
        torch.manual_seed(0)
        d = np.load(data)
        x = torch.from_numpy(d["images"]).double()
        y = torch.from_numpy(d["labels"]).long()
        IMG_HW = tuple(x.shape[2:])
        model = load(py)
        snip, norm = grads(model, x, y)
        nw, relus = naswot(model, x)
        got = {"synflow": synflow(model), "naswot": nw, "snip": snip, "grad_norm": norm,
               "jacob_cov": jacob_cov(model, x),
               "params": float(sum(p.numel() for p in model.parameters()))}
        nas = dict(zip(NAMES, [float(v) for v in d["scores"][:6]]))
        line = []
        for n in NAMES:
            # naswot: a code flipping between fp32 and float64 near 0 moves log|det K| a little
            tol = 1e-3 if n == "naswot" else 1e-3 * abs(got[n])
            if n == "naswot" and relus == 0:  # no ReLU: nas refuses (NaN)
                got[n] = float("nan")
                ok = nas[n] != nas[n]
            else:
                ok = abs(nas[n] - got[n]) <= tol
            line.append("%s nas %.6g torch %.6g%s" % (n, nas[n], got[n], "" if ok else " MISMATCH"))
            status |= not ok
        print("%s (%d ReLUs): %s" % (os.path.basename(py), relus, "; ".join(line)))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
