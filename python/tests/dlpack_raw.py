"""A DLPack 0.6 producer built field by field with ctypes, for tests that hand tenlane
capsules no well-behaved library would make (NULL shape, NULL data, negative or huge
extents, unaligned data, wrong capsule names). Not a test module: test_dlpack_hostile.py
and test_dlpack_fuzz.py import it."""

import ctypes

import numpy as np

KDL_CPU = 1
KDL_FLOAT = 2
KDL_COMPLEX = 5

CODES = {
    np.dtype(np.float32): (KDL_FLOAT, 32),
    np.dtype(np.float64): (KDL_FLOAT, 64),
    np.dtype(np.complex64): (KDL_COMPLEX, 64),
    np.dtype(np.complex128): (KDL_COMPLEX, 128),
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_NAMES = {}  # capsule names live as long as the process: the capsule keeps only a pointer


def capsule(managed, name=b"dltensor"):
    """A capsule over `managed` (a DLManagedTensor kept alive by the caller), named `name`,
    with no destructor of its own."""
    name = _NAMES.setdefault(name, ctypes.create_string_buffer(name))
    return _capsule_new(ctypes.addressof(managed), ctypes.addressof(name), None)


class RawProducer:
    """An object with __dlpack__ returning a capsule over the fields given. `data` is an
    address (int) or None; `shape`/`strides` are lists of int64 or None (a NULL pointer);
    `ndim` defaults to len(shape). `deleter=False` leaves the deleter NULL. Every capsule
    it hands out and the memory behind it stays alive with the producer; `deleted` counts
    the deleter's calls."""

    def __init__(self, data, dtype, shape, strides=None, ndim=None, byte_offset=0, keep=None,
                 deleter=True, name=b"dltensor", device=KDL_CPU, code=None, bits=None,
                 lanes=1):
        self.keep = keep  # the memory `data` points into
        self.deleted = 0
        self.name = name
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = data
        t.device = DLDevice(device, 0)
        t.ndim = len(shape or []) if ndim is None else ndim
        dcode, dbits = CODES[np.dtype(dtype)]
        t.dtype = DLDataType(dcode if code is None else code, dbits if bits is None else bits,
                             lanes)
        self.shape = (ctypes.c_int64 * max(1, len(shape or [])))(*(shape or []))
        self.strides = (ctypes.c_int64 * max(1, len(strides or [])))(*(strides or []))
        if shape is not None:
            t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = byte_offset
        if deleter:
            def on_delete(_):
                self.deleted += 1

            self.deleter = DELETER(on_delete)
            self.managed.deleter = self.deleter
        self.capsules = []

    def __dlpack__(self, stream=None):
        c = capsule(self.managed, self.name)
        self.capsules.append(c)
        return c

    def __dlpack_device__(self):
        return (self.managed.dl_tensor.device.device_type, 0)


def producer_over(array, **fields):
    """A RawProducer describing numpy `array` exactly (element strides), fields overridden."""
    size = array.itemsize
    args = dict(
        data=array.__array_interface__["data"][0],
        dtype=array.dtype,
        shape=list(array.shape),
        strides=[s // size for s in array.strides],
        keep=array,
    )
    args.update(fields)
    return RawProducer(**args)
