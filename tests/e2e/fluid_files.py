"""fluid_files.py: writers of Fluid's tensor files, built from the formats' definitions, for the
tests that read them (tensor_load.sh, recordio_files.sh, tests/fuzz/lodstream_seeds.py and
recordio_seeds.py).

lod_tensor(): one LoDTensor in the stream format of Fluid's save op: uint32 LoD version 0, uint64
number of levels, each level's byte size (uint64) and offsets (uint64), uint32 tensor version 0,
int32 size of the TensorDesc protobuf message (field 1 data_type varint, field 2 dims varints),
the message, then the raw values."""
import struct

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


def recordio(records, max_num_records=1000, compressor=0):
    """A RecordIO file of Fluid's writer: chunks of at most max_num_records records, each chunk a
    header of five uint32 (magic 0x01020304, records, zlib's CRC-32 of the payload, compressor,
    payload size) then the payload, each record its uint32 length and its bytes."""
    import zlib
    out = b""
    for i in range(0, len(records), max_num_records):
        payload = b"".join(struct.pack("<I", len(r)) + r for r in records[i:i + max_num_records])
        out += struct.pack("<5I", 0x01020304, len(records[i:i + max_num_records]), zlib.crc32(payload) & 0xFFFFFFFF,
                           compressor, len(payload)) + payload
    return out


def write_files(d, files):
    """Writes each {name: bytes} of files into the directory d (made when missing)."""
    import os
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
