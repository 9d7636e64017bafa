"""Minimal GGUF v3 metadata reader and writer (key-value pairs only, no tensors) for the tokenizer tools.

Debian 12 has no python3-gguf; a vocabulary-only GGUF is just the header and its metadata, which is all that
llama.cpp's vocab_only loading and Speculum's tokenizer read.
"""
import struct

T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
_SCALAR = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f", T_BOOL: "<?",
           T_U64: "<Q", T_I64: "<q", T_F64: "<d"}


def read_kv(path):
    """{key: (type, value)}; arrays as (T_ARR, (element_type, [values]))."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = data[pos:pos + n].decode("utf-8", errors="surrogateescape")
        pos += n
        return s

    def value(t):
        if t == T_STR:
            return string()
        if t == T_ARR:
            et, n = take("<I"), take("<Q")
            return (et, [value(et) for _ in range(n)])
        return take(_SCALAR[t])

    assert data[:4] == b"GGUF", path
    pos = 4
    take("<I")
    take("<Q")
    n_kv = take("<Q")
    out = {}
    for _ in range(n_kv):
        k = string()
        t = take("<I")
        out[k] = (t, value(t))
    return out


def write_kv(path, kv):
    """kv: list of (key, type, value) in order; arrays as (key, T_ARR, (element_type, values))."""
    buf = bytearray(b"GGUF")
    buf += struct.pack("<IQQ", 3, 0, len(kv))

    def put_str(s):
        b = s.encode("utf-8", errors="surrogateescape")
        buf.extend(struct.pack("<Q", len(b)))
        buf.extend(b)

    def put(t, v):
        if t == T_STR:
            put_str(v)
        elif t == T_ARR:
            et, vals = v
            buf.extend(struct.pack("<IQ", et, len(vals)))
            for x in vals:
                put(et, x)
        else:
            buf.extend(struct.pack(_SCALAR[t], v))

    for k, t, v in kv:
        put_str(k)
        buf.extend(struct.pack("<I", t))
        put(t, v)
    buf.extend(b"\0" * ((-len(buf)) % 32))
    open(path, "wb").write(bytes(buf))
