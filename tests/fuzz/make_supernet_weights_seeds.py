#!/usr/bin/env python3
"""Write the seeds of the supernet_weights fuzz target
(tests/fuzz/corpus/supernet_weights/) from the layout in
trainer/supernet_map_impl.h, independently of nas's writer: a valid file of
three slots, one of none, one of another fingerprint and a truncated one.
Usage: python3 tests/fuzz/make_supernet_weights_seeds.py"""
import os
import struct
import zlib

HEADER, ENTRY, KEY, ALIGN = 128, 256, 224, 64


def up(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def weights_file(fp, steps, slots):
    fpb = fp.encode()
    table = up(HEADER + len(fpb))
    data = up(table + ENTRY * len(slots))
    entries, values, at = b"", b"", data
    for key, shape in slots:
        count = shape[0] * shape[1] * shape[2] * shape[3]
        vals = struct.pack("<%df" % count, *[0.25 * (i % 7) - 0.5 for i in range(count)])
        entries += key.encode().ljust(KEY, b"\0") + struct.pack("<4iQQ", *shape, at, count)
        pad = up(len(vals)) - len(vals)
        values += vals + b"\0" * pad
        at += len(vals) + pad
    def header(mcrc, dcrc):
        h = b"NASSNW\r\n" + struct.pack("<IIqQQQQQQQII", 1, HEADER, steps, HEADER, len(fpb), table,
                                         len(slots), data, at - data, at, mcrc, dcrc)
        return h.ljust(HEADER, b"\0")
    meta = header(0, 0) + fpb.ljust(table - HEADER, b"\0") + entries
    mcrc, dcrc = zlib.crc32(meta), zlib.crc32(values)
    out = header(mcrc, dcrc) + meta[HEADER:]
    return out.ljust(data, b"\0") + values


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(here, "corpus", "supernet_weights")
    os.makedirs(d, exist_ok=True)
    three = [("stem.0.weight", (2, 1, 3, 3)), ("s1.l0.expand.weight@mb3_k3", (5, 2, 1, 1)),
             ("head.1.running_var", (4, 1, 1, 1))]
    files = {"three_slots": weights_file("fuzz", 7, three), "no_slots": weights_file("fuzz", 0, []),
             "other_fingerprint": weights_file("other supernet", 7, three)}
    files["truncated"] = files["three_slots"][:-10]
    for name, b in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(b)


if __name__ == "__main__":
    main()
