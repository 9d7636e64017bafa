# Minimal GGUF v3 writer and reader in pure Python/numpy, following llama.cpp's gguf layout: header, metadata in
# insertion order, tensor infos, zero padding to `general.alignment` (32), then each tensor's data padded to the
# alignment (the last one too). Dims are in ggml order (dims[0] = row length = the LAST torch dimension).
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# Metadata value types (on-disk numbering).
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_UINT64, T_INT64, \
    T_FLOAT64 = range(13)
_SCALAR_FMT = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I", T_INT32: "<i",
               T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q", T_FLOAT64: "<d"}

# ggml tensor types used here. BF16 is stored as the high 16 bits of the float32, rounded to nearest even.
GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30
_NP_DTYPE = {GGML_F32: np.float32, GGML_F16: np.float16, GGML_BF16: np.uint16}


def to_bf16_bits(a):
    """float32 array -> uint16 BF16 bit patterns, round to nearest even (NaN stays NaN), as ggml converts."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def from_bf16_bits(b):
    """uint16 BF16 bit patterns -> float32 (exact)."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _pad(n, align=ALIGNMENT):
    return (n + align - 1) // align * align


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class GgufWriter:
    def __init__(self):
        self.kv = []       # (key, type, value, array element type or None)
        self.tensors = []  # (name, ggml dims, ggml type, bytes)

    def _put(self, key, vtype, value, etype=None):
        if any(k == key for k, _, _, _ in self.kv):
            raise ValueError("duplicate key " + key)
        self.kv.append((key, vtype, value, etype))

    def add_uint32(self, key, v):
        self._put(key, T_UINT32, int(v))

    def add_int32(self, key, v):
        self._put(key, T_INT32, int(v))

    def add_float32(self, key, v):
        self._put(key, T_FLOAT32, float(v))

    def add_bool(self, key, v):
        self._put(key, T_BOOL, bool(v))

    def add_string(self, key, v):
        self._put(key, T_STRING, str(v))

    def add_array(self, key, etype, values):
        self._put(key, T_ARRAY, list(values), etype)

    def add_tensor(self, name, array, ggml_type):
        """array: numpy array in torch/row-major shape; stored as ggml_type with reversed dims."""
        if any(t[0] == name for t in self.tensors):
            raise ValueError("duplicate tensor " + name)
        if ggml_type == GGML_BF16:
            a = to_bf16_bits(array)
        else:
            a = np.ascontiguousarray(array, dtype=_NP_DTYPE[ggml_type])
        self.tensors.append((name, list(reversed(a.shape)), ggml_type, a.tobytes()))

    @staticmethod
    def _value(vtype, v, etype):
        if vtype == T_STRING:
            return _str(v)
        if vtype == T_ARRAY:
            out = struct.pack("<IQ", etype, len(v))
            if etype == T_STRING:
                return out + b"".join(_str(s) for s in v)
            return out + np.array(v, dtype=np.dtype(_SCALAR_FMT[etype])).tobytes()
        return struct.pack(_SCALAR_FMT[vtype], v)

    def to_bytes(self):
        out = bytearray(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv)))
        for key, vtype, v, etype in self.kv:
            out += _str(key) + struct.pack("<I", vtype) + self._value(vtype, v, etype)
        offset = 0
        for name, dims, gtype, data in self.tensors:
            out += _str(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims)
            out += struct.pack("<IQ", gtype, offset)
            offset += _pad(len(data))
        out += b"\0" * (_pad(len(out)) - len(out))
        for _, _, _, data in self.tensors:
            out += data + b"\0" * (_pad(len(data)) - len(data))
        return bytes(out)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())


class GgufReader:
    """Reads a GGUF file written by GgufWriter (or llama.cpp): .kv {key: value}, .tensors {name: numpy array in
    torch shape (reversed ggml dims); F32/F16 as stored, BF16 widened to float32}, .tensor_types {name: ggml type}, .tensor_order [names]."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        if self.buf[:4] != GGUF_MAGIC:
            raise ValueError("%s: not a GGUF file" % path)
        self.pos = 4
        self.version, n_tensors, n_kv = self._u("<IQQ")
        self.kv = {}
        for _ in range(n_kv):
            key = self._s()
            (vtype,) = self._u("<I")
            self.kv[key] = self._v(vtype)
        infos = []
        for _ in range(n_tensors):
            name = self._s()
            (nd,) = self._u("<I")
            dims = self._u("<%dQ" % nd)
            gtype, off = self._u("<IQ")
            infos.append((name, dims, gtype, off))
        align = self.kv.get("general.alignment", ALIGNMENT)
        base = _pad(self.pos, align)
        self.tensors, self.tensor_types, self.tensor_order = {}, {}, []
        for name, dims, gtype, off in infos:
            dt = np.dtype(_NP_DTYPE[gtype])
            n = int(np.prod(dims))
            a = np.frombuffer(self.buf, dtype=dt, count=n, offset=base + off)
            if gtype == GGML_BF16:
                a = from_bf16_bits(a)
            self.tensors[name] = a.reshape(tuple(reversed(dims)))
            self.tensor_types[name] = gtype
            self.tensor_order.append(name)

    def _u(self, fmt):
        r = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return r

    def _s(self):
        (n,) = self._u("<Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _v(self, vtype):
        if vtype == T_STRING:
            return self._s()
        if vtype == T_ARRAY:
            etype, n = self._u("<IQ")
            return [self._v(etype) for _ in range(n)]
        return self._u(_SCALAR_FMT[vtype])[0]
