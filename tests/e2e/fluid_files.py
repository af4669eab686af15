"""fluid_files.py: writers of Fluid's tensor files, built from the formats' definitions, for the
tests that read them (tensor_load.sh, recordio_files.sh, tests/fuzz/lodstream_seeds.py and
recordio_seeds.py), and readers of tensors (read_lod_tensor) and RecordIO files for the tests of
fluidc's writers. Snappy is
written and read here by Python's own code (a greedy matcher, the raw format's decoder, the
framing of Fluid's snappystream library), with no module from outside the standard library.

lod_tensor(): one LoDTensor in the stream format of Fluid's save op: uint32 LoD version 0, uint64
number of levels, each level's byte size (uint64) and offsets (uint64), uint32 tensor version 0,
int32 size of the TensorDesc protobuf message (field 1 data_type varint, field 2 dims varints),
the message, then the raw values."""
import struct

from crc32c import crc32c, masked

# Fluid's VarType.Type numbers (framework.proto)
VARTYPE = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6,
           "uint8": 20, "int8": 21}
PACK = {"bool": "B", "int16": "h", "int32": "i", "int64": "q", "float16": "e", "float32": "f", "float64": "d",
        "uint8": "B", "int8": "b"}


def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def desc(dtype, dims, packed=False):
    out = b"\x08" + varint(VARTYPE[dtype] if isinstance(dtype, str) else dtype)
    if packed:
        body = b"".join(varint(d) for d in dims)
        return out + b"\x12" + varint(len(body)) + body
    return out + b"".join(b"\x10" + varint(d) for d in dims)


def lod_tensor(dtype, dims, values, lod=(), packed=False):
    """values: a flat list (packed with dtype's struct code) or raw bytes."""
    out = struct.pack("<IQ", 0, len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack("<%dQ" % len(level), *level)
    d = desc(dtype, dims, packed)
    if not isinstance(values, bytes):
        values = struct.pack("<%d%s" % (len(values), PACK[dtype]), *values)
    return out + struct.pack("<Ii", 0, len(d)) + d + values


def read_lod_tensor(data, pos=0):
    """The LoDTensor of the stream format at data[pos:] (Fluid's load op's reading, from the format's
    definition): (dtype name, dims, values as a list, LoD levels as lists, the byte after it)."""
    ver, nlev = struct.unpack_from("<IQ", data, pos)
    assert ver == 0, "LoD version %d" % ver
    pos += 12
    lod = []
    for _ in range(nlev):
        nbytes, = struct.unpack_from("<Q", data, pos)
        lod.append(list(struct.unpack_from("<%dQ" % (nbytes // 8), data, pos + 8)))
        pos += 8 + nbytes
    ver, dsz = struct.unpack_from("<Ii", data, pos)
    assert ver == 0, "tensor version %d" % ver
    pos += 8
    end, dtype, dims = pos + dsz, None, []
    while pos < end:  # TensorDesc: field 1 data_type, field 2 dims (varints, or packed)
        key, pos = read_varint(data, pos)
        if key == 0x08:
            code, pos = read_varint(data, pos)
            dtype = [k for k, v in VARTYPE.items() if v == code][0]
        elif key == 0x10:
            d, pos = read_varint(data, pos)
            dims.append(d)
        elif key == 0x12:
            n, pos = read_varint(data, pos)
            stop = pos + n
            while pos < stop:
                d, pos = read_varint(data, pos)
                dims.append(d)
        else:
            raise ValueError("TensorDesc field key %d" % key)
    n = 1
    for d in dims:
        n *= d
    values = list(struct.unpack_from("<%d%s" % (n, PACK[dtype]), data, pos))
    return dtype, dims, values, lod, pos + n * struct.calcsize(PACK[dtype])


def read_varint(data, pos):
    v, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def crc32c_masked(data):
    """CRC-32C, masked as Snappy's framing stores it."""
    return masked(crc32c(data))


def snappy_raw(data):
    """Snappy's raw format of data by a greedy matcher: copies (2-byte offsets, 4 to 64 bytes) of
    earlier 4-byte sequences, literals between them. Valid Snappy, not byte-equal to the library's."""
    out = varint(len(data))
    seen = {}
    lit = 0
    i = 0

    def literal(chunk):
        if len(chunk) > 65536:
            return literal(chunk[:65536]) + literal(chunk[65536:])
        n = len(chunk) - 1
        if n < 60:
            return bytes([n << 2]) + chunk
        if n < 256:
            return bytes([60 << 2, n]) + chunk
        return bytes([61 << 2]) + struct.pack("<H", n) + chunk
    while i + 4 <= len(data):
        key = data[i:i + 4]
        j = seen.get(key)
        seen[key] = i
        if j is not None and i - j < 65536:
            n = 4
            while i + n < len(data) and n < 64 and data[j + n] == data[i + n]:
                n += 1
            if lit < i:
                out += literal(data[lit:i])
            out += bytes([(n - 1) << 2 | 2]) + struct.pack("<H", i - j)
            i += n
            lit = i
        else:
            i += 1
    if lit < len(data):
        out += literal(data[lit:])
    return out


def snappy_unraw(data):
    """The bytes of Snappy's raw format data (literals and the three kinds of copies)."""
    n, shift, p = 0, 0, 0
    while True:
        n |= (data[p] & 0x7F) << shift
        shift += 7
        p += 1
        if data[p - 1] < 0x80:
            break
    out = bytearray()
    while p < len(data):
        tag = data[p]
        p += 1
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                k = ln - 59
                ln = int.from_bytes(data[p:p + k], "little")
                p += k
            out += data[p:p + ln + 1]
            p += ln + 1
            continue
        if kind == 1:
            ln, off = 4 + (tag >> 2 & 7), (tag >> 5) << 8 | data[p]
            p += 1
        else:
            k = 2 if kind == 2 else 4
            ln, off = (tag >> 2) + 1, int.from_bytes(data[p:p + k], "little")
            p += k
        assert 0 < off <= len(out), "a copy before the start"
        for _ in range(ln):
            out.append(out[-off])
    assert len(out) == n, "%d bytes, the header says %d" % (len(out), n)
    return bytes(out)


SNAPPY_MAGIC = b"snappy\0"


def snappy_frame(payload):
    """A Snappy chunk's payload as Fluid's writer (the snappystream library) frames it: "snappy" and a
    zero byte, then blocks of 32768 bytes (the last shorter), each a flag (1 compressed, 0 stored when
    compression saves less than an eighth), its length (uint16 big-endian), the masked CRC-32C of its
    bytes (uint32 big-endian) and its data."""
    out = SNAPPY_MAGIC
    for i in range(0, len(payload), 32768):
        block = payload[i:i + 32768]
        z = snappy_raw(block)
        packed = len(z) < len(block) - len(block) // 8
        data = z if packed else block
        out += struct.pack(">BHI", 1 if packed else 0, len(data), crc32c_masked(block)) + data
    return out


def snappy_unframe(framed):
    """The payload of a framed Snappy chunk, each block's CRC-32C checked."""
    assert framed[:7] == SNAPPY_MAGIC, "no snappystream magic"
    out, p = b"", 7
    while p < len(framed):
        flag, ln, crc = struct.unpack(">BHI", framed[p:p + 7])
        data = framed[p + 7:p + 7 + ln]
        assert flag in (0, 1) and len(data) == ln, "a block cut short"
        block = snappy_unraw(data) if flag else data
        assert crc32c_masked(block) == crc, "a block's CRC-32C"
        out += block
        p += 7 + ln
    return out


def recordio(records, max_num_records=1000, compressor=0):
    """A RecordIO file of Fluid's writer: chunks of at most max_num_records records, each chunk a
    header of five uint32 (magic 0x01020304, records, zlib's CRC-32 of the payload, compressor,
    payload size) then the payload, each record its uint32 length and its bytes; compressor 1
    (Snappy) frames the payload with snappy_frame()."""
    import zlib
    out = b""
    for i in range(0, len(records), max_num_records):
        payload = b"".join(struct.pack("<I", len(r)) + r for r in records[i:i + max_num_records])
        if compressor == 1:
            payload = snappy_frame(payload)
        out += struct.pack("<5I", 0x01020304, len(records[i:i + max_num_records]), zlib.crc32(payload) & 0xFFFFFFFF,
                           compressor, len(payload)) + payload
    return out


def read_recordio(data):
    """The records of a RecordIO file and each chunk's compressor: (records, [compressor, ...]),
    checking every checksum."""
    import zlib
    recs, comps, p = [], [], 0
    while p < len(data):
        magic, n, crc, comp, size = struct.unpack("<5I", data[p:p + 20])
        payload = data[p + 20:p + 20 + size]
        assert magic == 0x01020304 and len(payload) == size and zlib.crc32(payload) & 0xFFFFFFFF == crc, "a chunk"
        if comp == 1:
            payload = snappy_unframe(payload)
        q = 0
        for _ in range(n):
            ln, = struct.unpack("<I", payload[q:q + 4])
            recs.append(payload[q + 4:q + 4 + ln])
            q += 4 + ln
        assert q == len(payload), "bytes after a chunk's records"
        comps.append(comp)
        p += 20 + size
    return recs, comps


def write_files(d, files):
    """Writes each {name: bytes} of files into the directory d (made when missing)."""
    import os
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
