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

# fuzz_api_calls: a program of steps, each an opcode byte, a slot byte, then its arguments
# (see the target). A size or int64 argument is a pick byte: below 96 an entry of the
# extremes table (for int64, odd picks positive, even ones negated), 96..199 a small value,
# 200 and above followed by eight raw big-endian bytes.
EXTREMES = [0, 1, 2, 3, 7, 63, 64, 4096, 65536, 1 << 31, 1 << 32, 1 << 62, 1 << 63,
            (1 << 63) + 1, (1 << 63) - 1, 2**64 - 1, 2**64 - 2, 2**64 - 4, 2**64 - 7,
            2**64 - 64, 2**64 - 65, 2**64 - 128, 2**64 - 4096]


def size_arg(value):
    if value in EXTREMES:
        return bytes([EXTREMES.index(value)])
    if 0 <= value < 104:
        return bytes([96 + value])
    return bytes([200]) + struct.pack(">Q", value % 2**64)


def i64_arg(value):
    for i, bits in enumerate(EXTREMES):
        for pick in (i, i + 23, i + 46, i + 69):
            if pick >= 96:
                continue
            got = bits if pick & 1 else (-bits) % 2**64
            if got == value % 2**64:
                return bytes([pick])
    if -52 <= value <= 51:
        return bytes([value + 148])
    return bytes([200]) + struct.pack(">Q", value % 2**64)


def op(code, slot, *args):
    return bytes([code, slot]) + b"".join(args)


CREATE, DESTROY, OPEN, CLOSE, TICKET, ENTER, STALE, SCRATCH, MAP, LOOP, SLICE, TENSOR = range(12)
I64_MIN, I64_MAX, SIZE_MAX = -(1 << 63), (1 << 63) - 1, 2**64 - 1

API = {
    "lifecycle": op(CREATE, 0, bytes([1]), size_arg(SIZE_MAX)) + op(OPEN, 0) + op(TICKET, 0)
    + op(ENTER, 0, bytes([0]), size_arg(100), size_arg(SIZE_MAX - 63), size_arg(0), size_arg(64))
    + op(CLOSE, 0) + op(STALE, 0, bytes([0])) + op(ENTER, 0, bytes([0]), *[size_arg(1)] * 4)
    + op(DESTROY, 0) + op(CREATE, 0, bytes([1]), size_arg(0)) + op(OPEN, 0)
    + op(ENTER, 0, bytes([0]), *[size_arg(1)] * 4) + op(DESTROY, 0),
    "scratch_huge": op(CREATE, 1, bytes([1]), size_arg(0)) + op(OPEN, 1)
    + op(SCRATCH, 1, size_arg(100), size_arg(SIZE_MAX - 64), size_arg(SIZE_MAX - 127),
         size_arg(SIZE_MAX), bytes([2]))
    + op(CREATE, 2, bytes([0]), size_arg(SIZE_MAX - 63)) + op(OPEN, 2)
    + op(SCRATCH, 2, size_arg(1 << 32), size_arg(SIZE_MAX - 4096), size_arg(7), size_arg(1 << 62),
         bytes([0])),
    "loops": op(LOOP, 0, size_arg(SIZE_MAX), size_arg(0)) + op(LOOP, 0, size_arg(SIZE_MAX), size_arg(1 << 63))
    + op(LOOP, 0, size_arg(SIZE_MAX - 6), size_arg(0)) + op(LOOP, 0, size_arg(SIZE_MAX - 1), size_arg(SIZE_MAX))
    + op(LOOP, 0, size_arg(1000), size_arg(7)) + op(LOOP, 0, size_arg(0), size_arg(0)),
    "slices": op(SLICE, 0, bytes([10]), i64_arg(0), i64_arg(I64_MIN), i64_arg(3))
    + op(SLICE, 0, bytes([10]), i64_arg(I64_MIN), i64_arg(3), i64_arg(I64_MAX))
    + op(SLICE, 0, bytes([10]), i64_arg(I64_MAX), i64_arg(I64_MIN), i64_arg(I64_MIN))
    + op(SLICE, 0, bytes([16]), i64_arg(-1), i64_arg(-17), i64_arg(-2))
    + op(SLICE, 0, bytes([0]), i64_arg(0), i64_arg(5), i64_arg(0)),
    "tensors": op(TENSOR, 0, bytes([2, 3, 4]), i64_arg(2), i64_arg(3), bytes([1]), i64_arg(-1),
                  i64_arg(6), i64_arg(2))
    + op(TENSOR, 0, bytes([3, 200]), i64_arg(I64_MAX), bytes([200]), i64_arg(I64_MAX), bytes([2]),
         i64_arg(0), i64_arg(0), i64_arg(0), bytes([0]), i64_arg(0), i64_arg(1), i64_arg(1))
    + op(TENSOR, 0, bytes([1, 200]), i64_arg(-3), i64_arg(0), bytes([0]), i64_arg(0), i64_arg(-1),
         i64_arg(-1)),
    "map_cancel": op(CREATE, 0, bytes([1]), size_arg(0)) + op(OPEN, 0)
    + op(MAP, 0, bytes([200, 100, 1, 40, 1])) + op(MAP, 0, bytes([200, 40, 1, 100, 1]))
    + op(MAP, 0, bytes([60, 0, 0, 0, 0])) + op(CLOSE, 0) + op(STALE, 0, bytes([0])),
}

for name, data in API.items():
    write("api_calls", name, data)
