#!/usr/bin/env bash
# tests/e2e/test_export_npy_labels.sh - an npy label file of shape [N, 1]
# (nas reads it as [N]; docs/data.md) gives the PyTorch export's
# load_data() labels of shape [N] too, equal to nas's --logits labels, so
# that the module's documented accuracy line, (model(x).argmax(1) ==
# y).float().mean(), compares each image with its own label. With [N, 1]
# labels it broadcast to an N x N comparison: on balanced classes every
# network scored 1/classes, without an error.
# Also: --logits-batch 100 on these 48 test images writes (and says) 48
# (it said "logits of 100 test images").
. "$(dirname "$0")/export_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_py numpy torch
cd "$TMP" || fail "cd"
"$PY" - <<'PYEOF'
import numpy as np
rng = np.random.default_rng(4)
lab = np.arange(48) % 4
x = np.clip(lab[:, None, None] * 60 + 20 + rng.normal(0, 20, (48, 8, 8)), 0, 255).astype(np.uint8)
np.save("x.npy", x)
np.save("y.npy", lab.reshape(48, 1).astype(np.int64))
PYEOF
[ -f y.npy ] || fail "could not write the test data"
data_conf l.conf npy-labels 'format = "npy"; train_images = "x.npy"; train_labels = "y.npy";
  test_images = "x.npy"; test_labels = "y.npy"; valid = 12;'
sed -i 's/stages = 2/stages = 1/; s/trials = 3/trials = 1/' l.conf
run 0 "$NAS" run l.conf --db l.db
run 0 "$NAS" export --db l.db --best --format pytorch -o lmod.py --logits l.npz --logits-batch 100
grep_in "^logits of 48 test images: l.npz$" "$TMP/out"
"$PY" - <<'PYEOF' || fail "load_data() labels are not nas's"
import numpy as np, torch, lmod
z = np.load("l.npz")
x, y = lmod.load_data("test")
assert tuple(y.shape) == (48,), "load_data() labels have shape %s, expected (48,)" % (tuple(y.shape),)
assert z["labels"].shape == (48,), z["labels"].shape
assert (y.numpy() == z["labels"]).all(), "labels differ from --logits"
_, y5 = lmod.load_data("train", limit=5)
assert tuple(y5.shape) == (5,), y5.shape
net = lmod.TinyNetwork()
net.load_state_dict(lmod.load_weights("lmod.npz"))
net.eval()
with torch.no_grad():
    pred = net(x).argmax(1)
acc = (pred == y).float().mean().item()
want = float((pred.numpy() == np.load("y.npy")[:, 0]).mean())
assert acc == want, "the documented accuracy line gives %g, the accuracy is %g" % (acc, want)
print("-- labels [48]; accuracy %.4f" % acc)
PYEOF
note "ok"
