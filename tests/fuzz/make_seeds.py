#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py: writes the checked-in seed corpora of the fuzz targets
(tests/fuzz/corpus/<target>/), in the byte layouts the targets' headers describe. Run it
again after changing a layout; the fuzzer grows its own corpus from these in build-fuzz/."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    with open(path, "wb") as f:
        f.write(data)


def einsum(shapes, kind, spec):
    out = bytes([len(shapes) - 1])
    for shape in shapes:
        out += bytes([len(shape)] + list(shape))
    return out + bytes([kind]) + spec.encode()


EINSUM = {
    "matmul": ([[3, 4], [4, 2]], 0, "ij,jk->ik"),
    "trace": ([[3, 3]], 0, "ii->"),
    "diagonal": ([[3, 3]], 1, "ii->i"),
    "transpose3": ([[2, 3, 4]], 0, "ijk->kji"),
    "ring3": ([[2, 3], [3, 4], [4, 2]], 2, "ij,jk,ki->"),
    "ellipsis": ([[2, 3, 4], [4, 2]], 0, "...k,kl->...l"),
    "ring4_implicit": ([[2, 2], [2, 2], [2, 2], [2, 2]], 0, "ab,bc,cd,da"),
    "dot": ([[3], [3]], 0, "i,i->"),
    "outer": ([[3], [4]], 1, "i,j->ij"),
    "implicit": ([[2, 3]], 0, "ji"),
    "spaces": ([[3, 4], [4, 2]], 0, " ij , jk -> ik "),
    "zero_extent": ([[0, 3], [3, 2]], 0, "ij,jk->ik"),
    "broadcast_ellipsis": ([[1, 3], [4, 3]], 0, "...j,...j->...j"),
    "batch": ([[2, 3, 4], [2, 4, 1]], 2, "bij,bjk->bik"),
    "lone_sum": ([[2, 3], [3, 4]], 0, "ij,jk->k"),
    "six_operands": ([[2, 2]] * 6, 0, "ab,bc,cd,de,ef,fa->"),
    "bad_label": ([[3, 4]], 0, "i#->i"),
    "bad_output": ([[3, 4], [4, 2]], 0, "ij,jk->iz"),
    "bad_arrow": ([[3]], 0, "i->>i"),
    "bad_dots": ([[3, 4]], 0, "..i.->i"),
    "repeat_output": ([[3, 4]], 0, "ij->ii"),
    "term_count": ([[3, 4]], 0, "ij,jk->ik"),
    "rank_mismatch": ([[3, 4]], 0, "ijk->i"),
    "extent_mismatch": ([[3, 4], [3, 2]], 0, "ij,jk->ik"),
}

for name, (shapes, kind, spec) in EINSUM.items():
    write("einsum_spec", name, einsum(shapes, kind, spec))


def small(v):
    assert -15 <= v <= 15
    return bytes([(abs(v) & 0x0F) | (0x40 if v < 0 else 0)])


def raw(v):
    return bytes([0x80]) + struct.pack(">q", v)


def desc(dtype, rank, axes, offset):
    out = bytes([dtype, rank])
    for extent, stride in axes:
        out += extent + stride
    return out + offset


DESC = {
    "colmajor_f64": desc(1, 2, [(small(3), small(1)), (small(4), small(3))], small(0)),
    "rowmajor_f32": desc(0, 2, [(small(3), small(4)), (small(4), small(1))], small(0)),
    "reversed_c64": desc(2, 1, [(small(5), small(-1))], small(4)),
    "broadcast_c128": desc(3, 3, [(small(2), small(0)), (small(3), small(1)), (small(2), small(3))],
                           small(0)),
    "scalar": desc(1, 0, [], small(2)),
    "empty": desc(1, 2, [(small(0), small(1)), (small(3), small(1))], small(0)),
    "padded": desc(1, 2, [(small(3), small(2)), (small(2), small(9))], small(1)),
    "interleaved": desc(1, 2, [(small(2), small(3)), (small(3), small(2))], small(0)),
    "colliding": desc(1, 2, [(small(4), small(2)), (small(3), small(3))], small(0)),
    "huge_extent": desc(1, 2, [(raw(1 << 62), small(1)), (small(4), small(1))], small(0)),
    "huge_stride": desc(1, 2, [(small(4), raw(1 << 62)), (small(4), small(1))], small(0)),
    "negative_extent": desc(1, 1, [(raw(-1), small(1))], small(0)),
    "negative_reach": desc(1, 1, [(small(4), small(-2))], small(0)),
    "min_stride": desc(1, 2, [(small(2), raw(-(1 << 63))), (small(2), small(1))], small(0)),
    "bad_dtype": desc(5, 1, [(small(3), small(1))], small(0)),
    "rank17": desc(1, 17, [(small(1), small(1))] * 17, small(0)),
    "rank16": desc(1, 16, [(small(1), small(1))] * 16, small(0)),
    "deep": desc(1, 5, [(small(2), small(1)), (small(2), small(2)), (small(2), small(4)),
                        (small(2), small(8)), (small(2), small(-15))], small(15)),
}

for name, data in DESC.items():
    write("tensor_desc", name, data)
