"""Random tf.train.Example / SequenceExample wire bytes for protobuf_decoded.txt:
usage: generate.py OUT_DIR SEED COUNT writes OUT_DIR/vNNNNN (a message) and
OUT_DIR/mNNNNN (the same mutated once). protobuf_decoded.txt holds what
libprotobuf-lite made of seed 1 (see its header)."""
import random, struct, sys, os
R = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
def varint(v, pad=0):
    v &= (1 << 64) - 1
    b = bytearray()
    while v >= 0x80: b.append((v & 0x7f) | 0x80); v >>= 7
    b.append(v)
    for _ in range(pad):  # non-minimal: continuation bits with zero payload
        if len(b) >= 10: break
        b[-1] |= 0x80; b.append(0)
    return bytes(b)
def tag(n, t): return varint(n << 3 | t)
def ld(n, body): return tag(n, 2) + varint(len(body)) + body
def unknown():
    n = R.choice([4, 5, 7, 15, 16, 100, 2**20])
    t = R.choice([0, 1, 2, 5, 3])
    if t == 0: return tag(n, 0) + varint(R.getrandbits(64))
    if t == 1: return tag(n, 1) + R.randbytes(8)
    if t == 5: return tag(n, 5) + R.randbytes(4)
    if t == 2: return ld(n, R.randbytes(R.randint(0, 5)))
    inner = b"".join(tag(R.randint(1, 9), 0) + varint(R.randint(0, 300)) for _ in range(R.randint(0, 2)))
    if R.random() < 0.3: inner += tag(9, 3) + tag(9, 0) + varint(1) + tag(9, 4)
    return tag(n, 3) + inner + tag(n, 4)
def maybe_unknowns(): return b"".join(unknown() for _ in range(R.choice([0, 0, 0, 1, 2])))
def int64list():
    parts = []
    for _ in range(R.randint(0, 3)):
        vals = [R.choice([0, 1, -1, 5, 2**63 - 1, -2**63, R.randint(-10**12, 10**12)]) for _ in range(R.randint(0, 4))]
        if R.random() < 0.5: parts.append(ld(1, b"".join(varint(v, R.choice([0, 0, 0, 1])) for v in vals)))
        else: parts += [tag(1, 0) + varint(v, R.choice([0, 0, 1])) for v in vals]
        parts.append(maybe_unknowns())
    R.shuffle(parts); return b"".join(parts)
def floatlist():
    parts = []
    for _ in range(R.randint(0, 3)):
        vals = [R.choice([0.0, 1.5, -2.25, 1e30, float('inf')]) for _ in range(R.randint(0, 4))]
        if R.random() < 0.5: parts.append(ld(1, b"".join(struct.pack('<f', v) for v in vals)))
        else: parts += [tag(1, 5) + struct.pack('<f', v) for v in vals]
        parts.append(maybe_unknowns())
    return b"".join(parts)
def byteslist():
    return b"".join(ld(1, R.randbytes(R.randint(0, 4))) + maybe_unknowns() for _ in range(R.randint(0, 3)))
def feature():
    parts = []
    for _ in range(R.choice([0, 1, 1, 1, 2, 3])):
        k = R.randint(1, 3)
        parts.append(ld(k, [byteslist, floatlist, int64list][k - 1]()))
        parts.append(maybe_unknowns())
    return b"".join(parts)
KEYS = [b"a", b"b", b"label", b"", b"\xc3\xa9t\xc3\xa9", b"zz"]
def key():
    if R.random() < 0.03: return R.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"a\xe2\x82"])
    return R.choice(KEYS)
def entry(value_fn):
    parts = []
    if R.random() < 0.9: parts.append(ld(1, key()))
    if R.random() < 0.1: parts.append(ld(1, key()))
    for _ in range(R.choice([0, 1, 1, 1, 1, 2])): parts.append(ld(2, value_fn()))
    parts.append(maybe_unknowns())
    R.shuffle(parts); return b"".join(parts)
def features(): return b"".join(ld(1, entry(feature)) + maybe_unknowns() for _ in range(R.randint(0, 5)))
def featurelist(): return b"".join(ld(1, feature()) + maybe_unknowns() for _ in range(R.randint(0, 3)))
def featurelists(): return b"".join(ld(1, entry(featurelist)) for _ in range(R.randint(0, 3)))
def message():
    parts = []
    for _ in range(R.choice([0, 1, 1, 1, 2])): parts.append(ld(1, features()))
    if R.random() < 0.3: parts.append(ld(2, featurelists()))
    parts.append(maybe_unknowns())
    R.shuffle(parts); return b"".join(parts)
def mutate(b):
    b = bytearray(b)
    if not b: return bytes(b)
    m = R.randint(0, 3)
    if m == 0: return bytes(b[:R.randrange(len(b))])
    if m == 1: b[R.randrange(len(b))] = R.randrange(256); return bytes(b)
    if m == 2: b[R.randrange(len(b))] ^= 1 << R.randrange(8); return bytes(b)
    i = R.randrange(len(b)); return bytes(b[:i] + R.randbytes(R.randint(1, 3)) + b[i:])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
for i in range(n):
    m = message()
    open(f"{out}/v{i:05d}", "wb").write(m)
    open(f"{out}/m{i:05d}", "wb").write(mutate(m))
