/*
 * export/export_data_py.c - the data helper of a PyTorch export (issue
 * 28): constants and functions written into the module after the network,
 * so the module reads and normalises the experiment's own data exactly as
 * nas did - preprocess(pixels) for raw pixels and load_data(split, ...,
 * limit) for the data set itself - for every data source nas reads:
 * the Fashion-MNIST shorthand (idx files in DATA_DIR; Fashion-MNIST's
 * fixed MEAN and STD) and each data.format (idx, npy, cifar, folder; the
 * experiment's per-channel MEAN and STD, its files or directory, its
 * data.size). Only numpy and torch are needed, and OpenCV for folder
 * images. The readers mirror trainer/data_*.c (docs/data.md).
 */
#include <stdio.h>
#include <string.h>
#include "export/export_impl.h"

/* Fashion-MNIST (the data.dataset shorthand): MEAN, STD and DATA_DIR are
 * written above it. */
static const char *const FMNIST_PY =
    "def preprocess(pixels):\n"
    "    \"\"\"uint8 images [N,28,28] or [N,1,28,28] (0..255) -> float32 tensor\n"
    "    [N,1,28,28] normalised exactly as nas trained: (pixel/255 - MEAN) / STD.\"\"\"\n"
    "    x = np.asarray(pixels, dtype=np.uint8).astype(np.float32)\n"
    "    one = np.float32(1.0)\n"
    "    x = (x * (one / np.float32(255.0)) - np.float32(MEAN)) * (one / np.float32(STD))\n"
    "    return torch.from_numpy(x.reshape(x.shape[0], IN_CHANNELS, x.shape[-2], x.shape[-1]))\n"
    "\n"
    "\n"
    "def load_data(split=\"test\", data_dir=DATA_DIR, limit=None):\n"
    "    \"\"\"(images, labels) of the Fashion-MNIST split \"train\" (60,000) or \"test\"\n"
    "    (10,000), read from the idx files (name.gz or name) in data_dir: images\n"
    "    float32 [N,1,28,28] through preprocess(), labels int64 [N]. limit: first N.\"\"\"\n"
    "    import gzip\n"
    "    import os\n"
    "    prefix = \"t10k\" if split == \"test\" else \"train\"\n"
    "\n"
    "    def read(name, offset):\n"
    "        path = os.path.join(data_dir, name)\n"
    "        opener = gzip.open if os.path.exists(path + \".gz\") else open\n"
    "        with opener(path + \".gz\" if opener is gzip.open else path, \"rb\") as f:\n"
    "            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)\n"
    "\n"
    "    pixels = read(prefix + \"-images-idx3-ubyte\", 16).reshape(-1, 28, 28)\n"
    "    labels = read(prefix + \"-labels-idx1-ubyte\", 8).astype(np.int64)\n"
    "    if limit is not None:\n"
    "        pixels, labels = pixels[:limit], labels[:limit]\n"
    "    return preprocess(pixels), torch.from_numpy(labels.copy())\n"
    "\n"
    "\n";

/* Any data.format: SCALE, MEAN, STD per channel are written above it. */
static const char *const PREPROCESS_PY =
    "def preprocess(pixels):\n"
    "    \"\"\"images [N,H,W], [N,C,H,W] or [N,H,W,C] (uint8 0..255, or float32 when nas\n"
    "    read float32 data) -> float32 tensor [N,C,H,W] normalised exactly as nas\n"
    "    trained: (x * SCALE - MEAN[c]) * (1 / STD[c]) in float32.\"\"\"\n"
    "    x = np.asarray(pixels).astype(np.float32)\n"
    "    if x.ndim == 3:\n"
    "        x = x[:, None]\n"
    "    if x.shape[1] != IN_CHANNELS and x.shape[-1] == IN_CHANNELS:\n"
    "        x = x.transpose(0, 3, 1, 2)\n"
    "    one = np.float32(1.0)\n"
    "    scale = one / np.float32(255.0) if SCALE != 1.0 else one\n"
    "    m = np.array(MEAN, dtype=np.float32).reshape(1, -1, 1, 1)\n"
    "    inv = (one / np.array(STD, dtype=np.float32)).reshape(1, -1, 1, 1)\n"
    "    return torch.from_numpy(np.ascontiguousarray((x * scale - m) * inv))\n"
    "\n"
    "\n"
    "def _labels(y, limit):\n"
    "    # int64 [N]: an npy label file of shape [N, 1], which nas reads, too\n"
    "    y = np.asarray(y).astype(np.int64).reshape(-1)\n"
    "    return torch.from_numpy(y[:limit] if limit is not None else y)\n"
    "\n"
    "\n";

/* idx, npy: the files of FILES, written above it. */
static const char *const FILES_PY =
    "def _files(split):\n"
    "    if split not in FILES:\n"
    "        raise ValueError(\"split is \\\"train\\\" or \\\"test\\\", not %r\" % (split,))\n"
    "    if FILES[split] is None:\n"
    "        raise ValueError(\"the search named no test files (data.test_images, data.test_labels)\")\n"
    "    return FILES[split]\n"
    "\n"
    "\n";

/* data.format = "npy" (LAYOUT above). */
static const char *const NPY_PY =
    "def load_data(split=\"test\", limit=None):\n"
    "    \"\"\"(images, labels) of split \"train\" or \"test\", read from FILES as nas\n"
    "    reads them: images float32 [N,C,H,W] through preprocess() (the layout\n"
    "    LAYOUT, or inferred as nas does), labels int64 [N]. limit: first N.\"\"\"\n"
    "    images, labels = _files(split)\n"
    "    x = np.load(images, mmap_mode=\"r\")\n"
    "    x = x[:limit] if limit is not None else x\n"
    "    layout = LAYOUT or (\"nhw\" if x.ndim == 3 else\n"
    "                        \"nchw\" if x.shape[1] <= 4 and x.shape[3] > 4 else \"nhwc\")\n"
    "    x = np.asarray(x)\n"
    "    if layout == \"nhwc\":\n"
    "        x = x.transpose(0, 3, 1, 2)\n"
    "    return preprocess(x), _labels(np.load(labels), limit)\n"
    "\n"
    "\n";

/* data.format = "idx". */
static const char *const IDX_PY =
    "def _read_idx(path):\n"
    "    \"\"\"An idx file (gzip or plain): uint8 array of its dimensions.\"\"\"\n"
    "    import gzip\n"
    "    with open(path, \"rb\") as f:\n"
    "        raw = f.read()\n"
    "    if raw[:2] == b\"\\x1f\\x8b\":\n"
    "        raw = gzip.decompress(raw)\n"
    "    dims = np.frombuffer(raw, \">u4\", raw[3], 4).astype(np.int64)\n"
    "    return np.frombuffer(raw, np.uint8, offset=4 + 4 * raw[3]).reshape(dims)\n"
    "\n"
    "\n"
    "def load_data(split=\"test\", limit=None):\n"
    "    \"\"\"(images, labels) of split \"train\" or \"test\", read from the idx files\n"
    "    in FILES: images float32 [N,1,H,W] through preprocess(), labels int64\n"
    "    [N]. limit: first N.\"\"\"\n"
    "    images, labels = _files(split)\n"
    "    x = _read_idx(images)\n"
    "    return preprocess(x[:limit] if limit is not None else x), _labels(_read_idx(labels), limit)\n"
    "\n"
    "\n";

/* data.format = "cifar" (DATA_DIR above). */
static const char *const CIFAR_PY =
    "def load_data(split=\"test\", data_dir=DATA_DIR, limit=None):\n"
    "    \"\"\"(images, labels) of split \"train\" or \"test\" of the CIFAR binary\n"
    "    batches in data_dir (CIFAR-10: data_batch_1..5.bin, test_batch.bin;\n"
    "    CIFAR-100: train.bin, test.bin, the fine label): images float32\n"
    "    [N,3,32,32] through preprocess(), labels int64 [N]. limit: first N.\"\"\"\n"
    "    import os\n"
    "    c10 = os.path.exists(os.path.join(data_dir, \"data_batch_1.bin\"))\n"
    "    lb = 1 if c10 else 2\n"
    "    if split == \"test\":\n"
    "        names = [\"test_batch.bin\" if c10 else \"test.bin\"]\n"
    "    else:\n"
    "        names = [\"data_batch_%d.bin\" % b for b in range(1, 6)] if c10 else [\"train.bin\"]\n"
    "    recs = np.concatenate([np.fromfile(os.path.join(data_dir, n), np.uint8).reshape(-1, lb + 3072)\n"
    "                           for n in names])\n"
    "    recs = recs[:limit] if limit is not None else recs\n"
    "    return preprocess(recs[:, lb:].reshape(-1, 3, 32, 32)), _labels(recs[:, lb - 1], None)\n"
    "\n"
    "\n";

/* data.format = "folder" (DATA_DIR, SIZE above): nas's listing,
 * decoding (trainer/data_folder.c, data_image.c) and bilinear resize. */
static const char *const FOLDER_PY =
    "def _entries(path, dirs):\n"
    "    \"\"\"Subfolders (dirs) or image files of path, in byte order of their\n"
    "    names, without dot-files: as nas lists them.\"\"\"\n"
    "    import os\n"
    "    out = []\n"
    "    for n in sorted(os.listdir(os.fsencode(path))):\n"
    "        p = os.path.join(os.fsencode(path), n)\n"
    "        if n.startswith(b\".\") or not os.path.exists(p):\n"
    "            continue\n"
    "        if os.path.isdir(p) if dirs else (\n"
    "                os.path.isfile(p) and n.lower().endswith((b\".png\", b\".jpg\", b\".jpeg\"))):\n"
    "            out.append(n)\n"
    "    return out\n"
    "\n"
    "\n"
    "def _decode(path):\n"
    "    \"\"\"H x W x C uint8 (C 1 or 3, RGB) as nas decodes: alpha dropped, 16 bits\n"
    "    scaled to 8 (libpng's rounding), EXIF orientation ignored. Needs OpenCV.\"\"\"\n"
    "    import os\n"
    "    import cv2\n"
    "    raw = np.fromfile(path, np.uint8)\n"
    "    im = cv2.imdecode(raw, cv2.IMREAD_UNCHANGED)\n"
    "    if im is None:\n"
    "        raise ValueError(\"%s: not a PNG or JPEG image OpenCV reads\" % os.fsdecode(path))\n"
    "    if im.dtype == np.uint16:\n"
    "        im = ((im.astype(np.uint32) * 255 + 32895) >> 16).astype(np.uint8)\n"
    "    # a grey PNG (colour type 0 or 4, byte 25 of the file) stays grey\n"
    "    grey = im.ndim == 2 or (raw[:4].tobytes() == b\"\\x89PNG\" and raw[25] in (0, 4))\n"
    "    im = im[:, :, None] if im.ndim == 2 else im[:, :, :1] if grey else im[:, :, 2::-1]\n"
    "    return np.ascontiguousarray(im)\n"
    "\n"
    "\n"
    "def _resize(im, oh, ow):\n"
    "    \"\"\"nas's bilinear resize (docs/data.md): source coordinate (i + 0.5) *\n"
    "    side / out - 0.5 clamped at 0, two taps, float32, + 0.5 and truncated.\"\"\"\n"
    "    h, w = im.shape[:2]\n"
    "    if (h, w) == (oh, ow):\n"
    "        return im\n"
    "    f32 = np.float32\n"
    "\n"
    "    def taps(side, out):\n"
    "        f = (np.arange(out, dtype=f32) + f32(0.5)) * (f32(side) / f32(out)) - f32(0.5)\n"
    "        f = np.maximum(f, f32(0))\n"
    "        i0 = f.astype(np.int64)\n"
    "        return i0, np.minimum(i0 + 1, side - 1), f - i0.astype(f32)\n"
    "\n"
    "    y0, y1, ay = taps(h, oh)\n"
    "    x0, x1, ax = taps(w, ow)\n"
    "    p = im.astype(f32)\n"
    "    ax, ay = ax[None, :, None], ay[:, None, None]\n"
    "    top = p[y0][:, x0] + (p[y0][:, x1] - p[y0][:, x0]) * ax\n"
    "    bot = p[y1][:, x0] + (p[y1][:, x1] - p[y1][:, x0]) * ax\n"
    "    v = top + (bot - top) * ay + f32(0.5)\n"
    "    return np.clip(v, 0, 255).astype(np.uint8)\n"
    "\n"
    "\n"
    "def load_data(split=\"test\", data_dir=DATA_DIR, limit=None):\n"
    "    \"\"\"(images, labels) of data_dir/train/ or data_dir/test/ (one subfolder\n"
    "    per class; class k is the k-th subfolder of train/ in byte order), read\n"
    "    as nas reads them: decoded (OpenCV), resized to SIZE, grey images\n"
    "    replicated to 3 channels when IN_CHANNELS is 3; images float32\n"
    "    [N,C,H,W] through preprocess(), labels int64 [N]. limit: first N.\"\"\"\n"
    "    import os\n"
    "    classes = _entries(os.path.join(data_dir, \"train\"), True)\n"
    "    root = os.path.join(os.fsencode(data_dir), os.fsencode(split))\n"
    "    paths, labels = [], []\n"
    "    for name in _entries(root, True):\n"
    "        if name not in classes:\n"
    "            raise ValueError(\"%s: class %s is not a folder of train/\" % (split, os.fsdecode(name)))\n"
    "        for f in _entries(os.path.join(root, name), False):\n"
    "            paths.append(os.path.join(root, name, f))\n"
    "            labels.append(classes.index(name))\n"
    "    paths = paths[:limit] if limit is not None else paths\n"
    "    out = []\n"
    "    for p in paths:\n"
    "        im = _decode(p)\n"
    "        if SIZE is not None:\n"
    "            im = _resize(im, SIZE[0], SIZE[1])\n"
    "        if im.shape[2] != IN_CHANNELS:\n"
    "            if im.shape[2] != 1:\n"
    "                raise ValueError(\"%s: a colour image, but the network reads grey ones\" %\n"
    "                                 os.fsdecode(p))\n"
    "            im = np.repeat(im, IN_CHANNELS, 2)\n"
    "        out.append(im.transpose(2, 0, 1))\n"
    "    return preprocess(np.stack(out)), _labels(labels, limit)\n"
    "\n"
    "\n";

/* "X" as a Python string literal, or None for "". */
static void py_str(FILE *f, const char *s)
{
    if (!s[0]) {
        fputs("None", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Where the data is: FILES (idx, npy), LAYOUT (npy), DATA_DIR (cifar,
 * folder), SIZE (folder). */
static void write_location(FILE *f, const nas_arch *a)
{
    const char *fmt = a->data.format;
    if (!strcmp(fmt, "idx") || !strcmp(fmt, "npy")) {
        fputs("# (images, labels) files of each split the search read (None: no test files)\n"
              "FILES = {\n    \"train\": (", f);
        py_str(f, a->data.train_images);
        fputs(", ", f);
        py_str(f, a->data.train_labels);
        fputs("),\n    \"test\": ", f);
        if (a->data.test_images[0]) {
            fputs("(", f);
            py_str(f, a->data.test_images);
            fputs(", ", f);
            py_str(f, a->data.test_labels);
            fputs(")", f);
        } else {
            fputs("None", f);
        }
        fputs(",\n}\n", f);
        if (!strcmp(fmt, "npy")) {
            fputs("LAYOUT = ", f);
            py_str(f, a->data.layout);
            fputs("  # data.layout of the images (None: inferred as nas does)\n", f);
        }
        return;
    }
    fputs("DATA_DIR = ", f);
    py_str(f, a->data.dir);
    fprintf(f, "  # %s\n", !strcmp(fmt, "cifar")
                                ? "the CIFAR binary batches (data.dir, or nas export --data)"
                                : "train/ and test/, one subfolder per class");
    if (!strcmp(fmt, "folder")) {
        if (a->data.size[0] > 0)
            fprintf(f, "SIZE = (%d, %d)  # data.size: every image resized to H x W\n",
                    a->data.size[0], a->data.size[1]);
        else
            fputs("SIZE = None  # the images' own (shared) size\n", f);
    }
}

void nas__export_data_py(FILE *f, const nas_arch *a)
{
    if (!a || !a->data.format[0]) {
        fprintf(f, "# The network was searched on Fashion-MNIST: inputs are normalised as\n"
                   "# (pixel/255 - MEAN) / STD, as nas trained it.\n"
                   "MEAN = %.4f\nSTD = %.4f\n"
                   "DATA_DIR = \"%s\"  # the idx files (data.dir, or nas export --data)\n"
                   "\n\n",
                NAS_FMNIST_MEAN, NAS_FMNIST_STD,
                a && a->data.dir[0] ? a->data.dir : NAS_FMNIST_DIR);
        fputs(FMNIST_PY, f);
        return;
    }
    const nas_data_info *di = &a->data.norm;
    fprintf(f, "# The network was searched on data.format = \"%s\": inputs of %dx%dx%d (C,H,W), "
               "%d classes,\n# %s pixels normalised per channel as (x * SCALE - MEAN[c]) / STD[c]."
               "\n",
            a->data.format, di->c, di->h, di->w, di->classes, di->u8 ? "uint8" : "float32");
    fprintf(f, "SCALE = %s\nMEAN = [", di->u8 ? "1.0 / 255.0" : "1.0");
    for (int c = 0; c < di->c; c++)
        fprintf(f, "%s%.9g", c ? ", " : "", (double)di->mean[c]);
    fprintf(f, "]\nSTD = [");
    for (int c = 0; c < di->c; c++)
        fprintf(f, "%s%.9g", c ? ", " : "", (double)di->std[c]);
    fputs("]\n", f);
    write_location(f, a);
    fputs("\n\n", f);
    fputs(PREPROCESS_PY, f);
    const char *fmt = a->data.format;
    if (!strcmp(fmt, "idx") || !strcmp(fmt, "npy"))
        fputs(FILES_PY, f);
    fputs(!strcmp(fmt, "npy")     ? NPY_PY
          : !strcmp(fmt, "idx")   ? IDX_PY
          : !strcmp(fmt, "cifar") ? CIFAR_PY
                                  : FOLDER_PY,
          f);
}
