#!/bin/sh
# recordio_files.sh FLRUN REPO_ROOT: Fluid's file readers (fluid.layers.open_files, layers.shuffle,
# layers.batch, double_buffer; docs/data.md, "RecordIO files") over RecordIO files a Python writer
# made from the formats' definitions (tests/e2e/fluid_files.py), each record a batch of LoDTensors
# as fluid.recordio_writer writes it. Checks: the values read are the written ones exactly (three
# dtypes, a field of sequences and its LoD, which lod() of the fetched value gives), one record
# per exe.run in file order over pass_num passes, then fluid.core.EOFException, and reset() starts over; thread_num threads give the same
# records; Snappy chunks (stored and compressed blocks) read as the same records, and a damaged
# block is an error naming it; layers.batch concatenates records and their LoD and drops a last short batch,
# and of layers.batch joins its batches; a shuffle is a seeded permutation of the records (of
# layers.batch, of the batches whole); each bad file and each record that is not the
# declared fields is a runtime error naming the file and the record; each bad argument a located
# compile error; and a linear model trains from RecordIO files to a loss far below its start.
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the Python writer"; exit 1; }
import random
import struct
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import lod_tensor, recordio, write_files


def record(r):
    # x float32 [2, 3], ids int64 [r + 2, 1] in two sequences, w float64 [1, 2, 2]
    return (lod_tensor("float32", [2, 3], [10.0 * r + i + 0.25 for i in range(6)])
            + lod_tensor("int64", [r + 2, 1], [100 * r + k for k in range(r + 2)], lod=[[0, 1, r + 2]])
            + lod_tensor("float64", [1, 2, 2], [r + 0.5, -r - 1e-300, 2.0 ** -20, 1e300]))


recs = [record(r) for r in range(3)]
files = {"a.recordio": recordio(recs[:2], max_num_records=1), "b.recordio": recordio(recs[2:])}
a = files["a.recordio"]
files["cut.recordio"] = a[:-5]
files["crc.recordio"] = a[:30] + bytes([a[30] ^ 1]) + a[31:]
files["a_snappy.recordio"] = recordio(recs[:2], max_num_records=1, compressor=1)
files["b_snappy.recordio"] = recordio(recs[2:], compressor=1)
# 4000 rows of 3 float32 that repeat: a payload of 3 blocks, each Snappy-compressed (flag 1)
big = lod_tensor("float32", [4000, 3], [float(i % 7) for i in range(12000)])
files["big_snappy.recordio"] = recordio([big], compressor=1)
assert files["big_snappy.recordio"][27] == 1, "the Python writer compresses the repeats"
with open("big.want", "w") as f:
    f.write("%.1f\n" % sum(float(i % 7) for i in range(12000)))
d = bytearray(files["a_snappy.recordio"])  # a byte of its first block flipped, the chunk's CRC-32 made to match
d[20 + 7 + 7 + 5] ^= 1
import zlib
size = struct.unpack("<I", bytes(d[16:20]))[0]
d[8:12] = struct.pack("<I", zlib.crc32(bytes(d[20:20 + size])) & 0xFFFFFFFF)
files["damaged_snappy.recordio"] = bytes(d)
files["garbage.recordio"] = b"not a recordio file at all\n"
files["extra.recordio"] = recordio([recs[0] + b"\0\0"])
# a linear model's data: y = x . (1, -2, 0.5, 3) + 0.5, 8 records of 8 rows in two files
rng = random.Random(1)
train = []
for r in range(8):
    xs = [rng.uniform(-1, 1) for _ in range(32)]
    ys = [sum(xs[4 * i + j] * (1.0, -2.0, 0.5, 3.0)[j] for j in range(4)) + 0.5 for i in range(8)]
    train.append(lod_tensor("float32", [8, 4], xs) + lod_tensor("float32", [8, 1], ys))
files["fit_a.recordio"] = recordio(train[:4], max_num_records=3)
files["fit_b.recordio"] = recordio(train[4:])
write_files(".", files)
PY
fail=0
# run NAME WANT_EXIT [ARGS]: runs NAME.fl (from stdin) and keeps its output
run() {
    name=$1 want=$2
    shift 2
    cat >"$name.fl"
    "$FLRUN" "$name.fl" "$@" >"$name.out" 2>"$name.err"
    rc=$?
    [ "$rc" = "$want" ] || { echo "FAIL: $name exited $rc, expected $want"; cat "$name.err"; fail=1; }
}
expect_out() { # NAME: stdout is NAME.want
    cmp -s "$1.out" "$1.want" || { echo "FAIL: $1 printed:"; cat "$1.out"; echo "--- expected:"; cat "$1.want"; fail=1; }
}
expect_err() {
    grep -qF -- "$2" "$1.err" || { echo "FAIL: $1: stderr lacks '$2'"; cat "$1.err"; fail=1; }
}
FILES='["a.recordio", "b.recordio"]'
DECL='shapes=[(-1, 3), (-1, 1), (-1, 2, 2)], lod_levels=[0, 1, 0], dtypes=["float32", "int64", "float64"]'

# the values of each record, in file order, twice (pass_num=2); EOF; reset() starts over
reads() { # NAME THREADS
    run "$1" 0 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL, thread_num=$2, pass_num=2)
x, ids, w = fluid.layers.read_file(reader)
seqs = fluid.layers.sequence_pool(fluid.layers.cast(ids, "float32"), "sum")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
try:
    while True:
        a, b, c, s = exe.run(fetch_list=[x, ids, w, seqs])
        print(a)
        print(b.reshape([-1]), s.reshape([-1]))
        print(c)
except fluid.core.EOFException:
    print("eof")
    reader.reset()
a, = exe.run(fetch_list=[x])
print(a)
FL
}
# one pass's records as printed
one_pass() {
    cat <<'OUT'
[[0.25 1.25 2.25]
 [3.25 4.25 5.25]]
[0 1] [0. 1.]
[[[ 5.00000000e-001 -1.00000000e-300]
  [ 9.53674316e-007  1.00000000e+300]]]
[[10.25 11.25 12.25]
 [13.25 14.25 15.25]]
[100 101 102] [100. 203.]
[[[ 1.50000000e+000 -1.00000000e+000]
  [ 9.53674316e-007  1.00000000e+300]]]
[[20.25 21.25 22.25]
 [23.25 24.25 25.25]]
[200 201 202 203] [200. 606.]
[[[ 2.50000000e+000 -2.00000000e+000]
  [ 9.53674316e-007  1.00000000e+300]]]
OUT
}
{ one_pass; one_pass; printf 'eof\n[[0.25 1.25 2.25]\n [3.25 4.25 5.25]]\n'; } >reads.want
cp reads.want reads_threads.want
cp reads.want reads_snappy.want
reads reads 1
reads reads_threads 2
expect_out reads
expect_out reads_threads
FILES='["a_snappy.recordio", "b_snappy.recordio"]'
reads reads_snappy 2
FILES='["a.recordio", "b.recordio"]'
expect_out reads_snappy
run big 0 <<'FL'
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=["big_snappy.recordio"], shapes=[(-1, 3)], lod_levels=[0],
                                 dtypes=["float32"])
x = fluid.layers.read_file(reader)
exe = fluid.Executor(fluid.CPUPlace())
v, = exe.run(fetch_list=[fluid.layers.reduce_sum(x)])
print("%.1f" % v[0])
FL
expect_out big

# layers.batch: two records a batch, their rows and sequences one after the other; of 3 records a
# pass the third is left over and dropped (Fluid's discard_leftover), so 2 passes give 3 batches
run batches 0 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL, pass_num=2)
reader = fluid.layers.double_buffer(fluid.layers.batch(reader, batch_size=2))
x, ids, w = fluid.layers.read_file(reader)
seqs = fluid.layers.sequence_pool(fluid.layers.cast(ids, "float32"), "sum")
exe = fluid.Executor(fluid.CPUPlace())
try:
    while True:
        a, s = exe.run(fetch_list=[x, seqs])
        print(a[:, 0], s.reshape([-1]))
except fluid.core.EOFException:
    print("eof")
FL
cat >batches.want <<'OUT'
[ 0.25  3.25 10.25 13.25] [  0.   1. 100. 203.]
[20.25 23.25  0.25  3.25] [200. 606.   0.   1.]
[10.25 13.25 20.25 23.25] [100. 203. 200. 606.]
eof
OUT
expect_out batches

# read_all NAME PASSES READER [FLRUN ARGS]: prints the first column of each batch READER (an
# expression of `reader`, open_files' reader of PASSES passes) gives, then eof
read_all() {
    n=$1 p=$2 r=$3
    shift 3
    run "$n" 0 "$@" <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL, pass_num=$p)
x, ids, w = fluid.layers.read_file($r)
exe = fluid.Executor(fluid.CPUPlace())
try:
    while True:
        a, = exe.run(fetch_list=[x])
        print(a[:, 0])
except fluid.core.EOFException:
    print("eof")
FL
}

# layers.batch of layers.batch: two batches of two records a batch (Fluid's batch reader takes the
# batches as its items); of 9 records (3 passes) the last is left over by the first batch, and the
# two batches of the second take the four of the first
read_all batch_twice 3 "fluid.layers.batch(fluid.layers.batch(reader, batch_size=2), batch_size=2)"
cat >batch_twice.want <<'OUT'
[ 0.25  3.25 10.25 13.25 20.25 23.25  0.25  3.25]
[10.25 13.25 20.25 23.25  0.25  3.25 10.25 13.25]
eof
OUT
expect_out batch_twice

# layers.shuffle of layers.batch: the batches (each two records) in a random order, each whole:
# every batch once an epoch
read_all shuffle_batches 4 "fluid.layers.shuffle(fluid.layers.batch(reader, batch_size=2), buffer_size=6)" --seed 3
sort shuffle_batches.out >shuffle_batches.sorted
printf '%s\n' '[ 0.25  3.25 10.25 13.25]' '[ 0.25  3.25 10.25 13.25]' '[10.25 13.25 20.25 23.25]' \
    '[10.25 13.25 20.25 23.25]' '[20.25 23.25  0.25  3.25]' '[20.25 23.25  0.25  3.25]' eof >shuffle_batches.want
cmp -s shuffle_batches.sorted shuffle_batches.want || { echo "FAIL: shuffle_batches is no shuffle of the batches:"; cat shuffle_batches.out; fail=1; }
[ "$(tail -1 shuffle_batches.out)" = eof ] || { echo "FAIL: shuffle_batches: eof not last"; fail=1; }
printf '%s\n' '[ 0.25  3.25 10.25 13.25]' '[20.25 23.25  0.25  3.25]' '[10.25 13.25 20.25 23.25]' \
    '[ 0.25  3.25 10.25 13.25]' '[20.25 23.25  0.25  3.25]' '[10.25 13.25 20.25 23.25]' >batch_order.want
head -6 shuffle_batches.out | cmp -s - batch_order.want && { echo "FAIL: shuffle_batches kept the batches' order"; fail=1; }

# layers.shuffle: each buffer of 3 records in an order drawn from the run's seed: every record
# once a pass, and two seeds two orders
shuffled() { # NAME SEED
    run "$1" 0 --seed "$2" <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL, pass_num=4)
reader = fluid.layers.shuffle(reader, buffer_size=3)
x, ids, w = fluid.layers.read_file(reader)
exe = fluid.Executor(fluid.CPUPlace())
try:
    while True:
        a, = exe.run(fetch_list=[x])
        print(a[0, 0])
except fluid.core.EOFException:
    print("eof")
FL
}
shuffled shuffle1 1
shuffled shuffle2 2
for f in shuffle1 shuffle2; do
    # each pass (3 lines) holds the three records
    awk 'NR <= 12 { p[int((NR - 1) / 3)] = p[int((NR - 1) / 3)] " " $1 } END {
             for (i = 0; i < 4; i++) { n = split(p[i], v, " "); s = 0; for (k = 1; k <= n; k++) s += v[k]
                                       if (n != 3 || s != 30.75) exit 1 } }' "$f.out" &&
        [ "$(sed -n 13p "$f.out")" = eof ] && [ "$(sort "$f.out" | uniq -c | awk '$1 != 4 && $2 != "eof"' | wc -l)" = 0 ] ||
        { echo "FAIL: $f is no shuffle of the records:"; cat "$f.out"; fail=1; }
done
cmp -s shuffle1.out shuffle2.out && { echo "FAIL: seeds 1 and 2 shuffle alike"; fail=1; }
[ "$(head -12 shuffle1.out | tr '\n' ' ')" = "0.25 10.25 20.25 0.25 10.25 20.25 0.25 10.25 20.25 0.25 10.25 20.25 " ] &&
    { echo "FAIL: the shuffle kept the files' order"; fail=1; }

# a bad file or a record that is not the declared fields: a runtime error naming file and record
bad() { # NAME FILE DECL MESSAGE
    run "$1" 1 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=["a.recordio", "$2"], $3)
x = fluid.layers.read_file(reader)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fetch_list=[x[0]])
FL
    expect_err "$1" "runtime error in op 'reader_open' ($1.fl:5:1): $4"
}
bad missing nope.recordio "$DECL" "a file of open_files: cannot open 'nope.recordio': No such file or directory"
bad directory . "$DECL" "a file of open_files: '.' is not a regular file (a directory)"
bad cut cut.recordio "$DECL" "'cut.recordio', a file of open_files, after record 1: the chunk at byte"
bad crc crc.recordio "$DECL" "'crc.recordio', a file of open_files, after record 0: the chunk at byte 0 has checksum"
bad snappy damaged_snappy.recordio "$DECL" "'damaged_snappy.recordio', a file of open_files, after record 0: the block at byte 27 of the Snappy chunk at byte 0 "
bad garbage garbage.recordio "$DECL" "'garbage.recordio', a file of open_files, after record 0: the chunk at byte 0 starts with"
bad extra extra.recordio "$DECL" "'extra.recordio', a file of open_files, record 0 (at byte 20): it holds 2 bytes after its 3 tensors (open_files declares 3 fields)"
bad dtype b.recordio 'shapes=[(-1, 3), (-1, 1), (-1, 2, 2)], lod_levels=[0, 1, 0], dtypes=["float32", "int32", "float64"]' \
    "'a.recordio', a file of open_files, record 0 (at byte 20): field 1 holds int64 values, but open_files(dtypes=...) declares int32"
bad shape b.recordio 'shapes=[(-1, 3), (-1, 1), (-1, 4)], lod_levels=[0, 1, 0], dtypes=["float32", "int64", "float64"]' \
    "'a.recordio', a file of open_files, record 0 (at byte 20): field 2 has shape [1, 2, 2], but open_files(shapes=...) declares [-1, 4]"
bad lod b.recordio 'shapes=[(-1, 3), (-1, 1), (-1, 2, 2)], lod_levels=[0, 0, 0], dtypes=["float32", "int64", "float64"]' \
    "'a.recordio', a file of open_files, record 0 (at byte 20): field 1 has 1 LoD levels, but open_files(lod_levels=...) declares 0"
bad fewer b.recordio 'shapes=[(-1, 3), (-1, 1), (-1, 2, 2), (-1, 1)], lod_levels=[0, 1, 0, 0], dtypes=["float32", "int64", "float64", "int64"]' \
    "'a.recordio', a file of open_files, record 0 (at byte 20): it holds 3 tensors, and open_files declares 4 fields"

# each bad argument: a compile error at its line
refused() { # NAME CALL MESSAGE
    run "$1" 1 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL)
$2
FL
    expect_err "$1" "$1.fl:3:1: error: $3"
}
refused lod2 "fluid.layers.open_files(['a.recordio'], [(-1, 3)], [2], ['float32'])" \
    "fluid.layers.open_files(lod_levels=[2]): each lod_level is 0 or 1"
refused width "fluid.layers.open_files(['a.recordio'], [(-1, -1)], [0], ['float32'])" \
    "fluid.layers.open_files(shapes=...): shape (-1, -1): the first dim is -1 (the record's rows) or a count, the others positive counts"
refused dtype16 "fluid.layers.open_files(['a.recordio'], [(-1, 3)], [0], ['float16'])" \
    "fluid.layers.open_files(dtypes=...): 'float16' is none of float32, float64, int32, int64 and bool"
refused threads "fluid.layers.open_files(['a.recordio'], [(-1, 3)], [0], ['float32'], thread_num=0)" \
    "fluid.layers.open_files(thread_num=...) must be an int of at least 1, found 0"
refused passes "fluid.layers.open_files(['a.recordio'], [(-1, 3)], [0], ['float32'], pass_num=0)" \
    "fluid.layers.open_files(pass_num=...) must be an int of at least 1, found 0"
refused is_test "fluid.layers.open_files(['a.recordio'], [(-1, 3)], [0], ['float32'], is_test='yes')" \
    "fluid.layers.open_files(is_test=...) must be True, False or None, found yes"
refused no_files "fluid.layers.open_files([], [(-1, 3)], [0], ['float32'])" \
    "fluid.layers.open_files(filenames=...) takes a list of RecordIO file paths, found []"
refused batch_size "fluid.layers.batch(reader, 0)" "fluid.layers.batch(batch_size=...) must be an int of at least 1, found 0"
refused shuffle_list "fluid.layers.shuffle([reader], 8)" \
    "fluid.layers.shuffle() takes a reader of fluid.layers.open_files, py_reader, create_py_reader_by_data, random_data_generator (or of layers.shuffle and layers.batch over them), found list"
run after_read 1 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL)
x = fluid.layers.read_file(reader)
reader = fluid.layers.shuffle(reader, 8)
FL
expect_err after_read "after_read.fl:4:10: error: fluid.layers.shuffle() of reader 'open_files_0', which read_file reads already: decorate the reader first, then read_file the decorated one"

# a linear model trains from RecordIO files (8 records of 8 rows, shuffled, 2 records a batch):
# its loss ends below 1% of its first (SGD from a loss near 3 reaches about 1e-5)
run fit 0 <<'FL'
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=["fit_a.recordio", "fit_b.recordio"], shapes=[(-1, 4), (-1, 1)],
                                 lod_levels=[0, 0], dtypes=["float32", "float32"], thread_num=2)
reader = fluid.layers.batch(fluid.layers.shuffle(reader, buffer_size=8), batch_size=2)
x, y = fluid.layers.read_file(reader)
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y))
fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
for epoch in range(40):
    try:
        while True:
            l, = exe.run(fetch_list=[loss])
            print('%d %.8f' % (epoch, l[0]))
    except fluid.core.EOFException:
        reader.reset()
FL
awk 'NR == 1 { first = $2 } { last = $2; n++ } END { exit !(n == 160 && first > 0.5 && last < 0.01 * first) }' fit.out ||
    { echo "FAIL: the model did not learn from the files:"; head -3 fit.out; tail -3 fit.out; fail=1; }
# fluid.recordio_writer: a script writes uci_housing's batches (from the dataset cache) to a file
# when its driver runs; open_files reads back each batch exactly (the sums DataFeeder's batches
# give); a model trains from the file (its last epoch's mean loss below a quarter of its first's:
# about 465 to 41 with SGD at 0.01)
sh "$ROOT/scripts/make_dataset_cache.sh" "$T/cache" >/dev/null || { echo "FAIL: make_dataset_cache.sh"; exit 1; }
export FLUIDC_DATA_HOME="$T/cache"
HOUSING='import paddle
import paddle.fluid as fluid
x = fluid.layers.data(name="x", shape=[13], dtype="float32")
y = fluid.layers.data(name="y", shape=[1], dtype="float32")
feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
reader = paddle.batch(paddle.dataset.uci_housing.train(), batch_size=20)'
run write 0 <<FL
$HOUSING
n = fluid.recordio_writer.convert_reader_to_recordio_file("./housing.recordio", reader, feeder,
    compressor=fluid.core.RecordIOWriter.Compressor.NoCompress, max_num_records=7, feed_order=["x", "y"])
print(n)
s = fluid.layers.reduce_sum(x) + fluid.layers.reduce_sum(y)
exe = fluid.Executor(fluid.CPUPlace())
for data in reader():
    v, = exe.run(feed=feeder.feed(data), fetch_list=[s])
    print("%.6f" % v[0])
FL
run read_back 0 <<'FL'
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=["housing.recordio"], shapes=[(-1, 13), (-1, 1)], lod_levels=[0, 0],
                                 dtypes=["float32", "float32"])
x, y = fluid.layers.read_file(reader)
s = fluid.layers.reduce_sum(x) + fluid.layers.reduce_sum(y)
exe = fluid.Executor(fluid.CPUPlace())
print("[21]")
try:
    while True:
        v, = exe.run(fetch_list=[s])
        print("%.6f" % v[0])
except fluid.core.EOFException:
    pass
FL
[ "$(head -1 write.out)" = "[21]" ] && [ "$(wc -l <write.out)" = 22 ] || { echo "FAIL: write printed:"; cat write.out; fail=1; }
cp write.out read_back.want
expect_out read_back
run train 0 <<'FL'
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=["housing.recordio"], shapes=[(-1, 13), (-1, 1)], lod_levels=[0, 0],
                                 dtypes=["float32", "float32"])
x, y = fluid.layers.read_file(fluid.layers.shuffle(reader, buffer_size=21))
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y))
fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
for epoch in range(30):
    try:
        while True:
            l, = exe.run(fetch_list=[loss])
            print("%d %.4f" % (epoch, l[0]))
    except fluid.core.EOFException:
        reader.reset()  # Fluid's reset of the chain: the shuffle over the reader starts over
FL
awk '{ s[$1] += $2; n[$1]++ } END { exit !(NR == 630 && n[0] == 21 && n[29] == 21 && s[0] / n[0] > 200 &&
                                          s[29] / n[29] < 0.25 * s[0] / n[0]) }' train.out ||
    { echo "FAIL: the model did not learn from the written file:"; head -3 train.out; tail -3 train.out; fail=1; }

# Snappy, Fluid's default: the file's chunks are Snappy chunks of Fluid's framing (read by the
# Python reader, every CRC checked) holding the same records as the file without compression,
# and open_files reads back the same batches
run snappy_w 0 <<FL
$HOUSING
print(fluid.recordio_writer.convert_reader_to_recordio_file("./h.recordio", reader, feeder, max_num_records=7))
FL
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the Snappy file is not the uncompressed one's records"; fail=1; }
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import read_recordio
plain, pc = read_recordio(open("housing.recordio", "rb").read())
snap, sc = read_recordio(open("h.recordio", "rb").read())
assert len(plain) == 21 and plain == snap and pc == [0, 0, 0] and sc == [1, 1, 1], (len(plain), pc, sc)
assert open("h.recordio", "rb").read()[27] == 1, "the first block is compressed"
PY
sed 's/housing.recordio/h.recordio/' read_back.fl | run read_snappy 0
cp write.out read_snappy.want
expect_out read_snappy

# convert_reader_to_recordio_files: 21 batches, 6 a file: Fluid's cut gives housing-00000 (batches
# 0-6), -00001 (7-12), -00002 (13-18), and batches 19 and 20 are not written; it returns 19
run files_w 0 <<FL
$HOUSING
print(fluid.recordio_writer.convert_reader_to_recordio_files("./housing.recordio", 6, reader, feeder))
FL
[ "$(cat files_w.out)" = "[19]" ] && [ -f housing-00002.recordio ] && [ ! -e housing-00003.recordio ] ||
    { echo "FAIL: convert_reader_to_recordio_files printed $(cat files_w.out):"; ls; fail=1; }
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the files are not Fluid's cut of the batches"; fail=1; }
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import read_recordio
plain, _ = read_recordio(open("housing.recordio", "rb").read())
got = [read_recordio(open("housing-%05d.recordio" % k, "rb").read()) for k in range(3)]
assert [len(r) for r, _ in got] == [7, 6, 6], [len(r) for r, _ in got]
assert sum((r for r, _ in got), []) == plain[:19] and all(set(c) == {1} for _, c in got)
PY
run files_bad 1 <<FL
$HOUSING
fluid.recordio_writer.convert_reader_to_recordio_files("./housing.rio", 6, reader, feeder)
FL
expect_err files_bad "files_bad.fl:7:1: error: fluid.recordio_writer.convert_reader_to_recordio_files(filename='./housing.rio'): the name ends in '.recordio'"
run files_bpf 1 <<FL
$HOUSING
fluid.recordio_writer.convert_reader_to_recordio_files("./housing.recordio", 0, reader, feeder)
FL
expect_err files_bpf "files_bpf.fl:7:1: error: fluid.recordio_writer.convert_reader_to_recordio_files(batch_per_file=...) must be an int of at least 1, found 0"

# the writer's refusals: Gzip, a reader of samples, a file a reader reads
run gzip_w 1 <<FL
$HOUSING
fluid.recordio_writer.convert_reader_to_recordio_file("./h.recordio", reader, feeder, compressor=2)
FL
expect_err gzip_w "gzip_w.fl:7:1: error: fluid.recordio_writer.convert_reader_to_recordio_file(compressor=Compressor.Gzip) is not compiled"
run samples_w 1 <<FL
$HOUSING
fluid.recordio_writer.convert_reader_to_recordio_file("./h.recordio", paddle.dataset.uci_housing.train(), feeder,
                                                      compressor=0)
FL
expect_err samples_w "samples_w.fl:7:1: error: fluid.recordio_writer.convert_reader_to_recordio_file takes a reader of batches"
run order_w 1 <<FL
$HOUSING
fluid.recordio_writer.convert_reader_to_recordio_file("./h.recordio", reader, feeder, compressor=0, feed_order=["x"])
FL
expect_err order_w "order_w.fl:7:1: error: fluid.recordio_writer.convert_reader_to_recordio_file(feed_order=...) names 1 of the feeder's 2 vars"
cp housing.recordio input.recordio
run input_w 1 <<FL
$HOUSING
r = fluid.layers.open_files(filenames=["input.recordio"], shapes=[(-1, 13), (-1, 1)], lod_levels=[0, 0],
                            dtypes=["float32", "float32"])
fluid.recordio_writer.convert_reader_to_recordio_file("input.recordio", reader, feeder, compressor=0)
hx, hy = fluid.layers.read_file(r)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fetch_list=[hx])
FL
expect_err input_w "runtime error in op 'recordio_write' (input_w.fl:9:1): 'input.recordio' is a file a reader of the program reads: write the RecordIO file to another path"
cmp -s housing.recordio input.recordio || { echo "FAIL: input.recordio was written over"; fail=1; }
# random_data_generator: float32 records uniform in [low, high) of the given shapes, a new one each
# exe.run without end (no EOF after 20 runs), batch concatenating 2 records (rows [2, 3] -> [4, 3]);
# the runs of one seed alike, of two seeds apart; 20 records of 1000 x 4 values in [0, 1) have a
# mean within 0.02 of 1/2 (its standard deviation is 0.0014) and every value in range
run rand1 0 --seed 1 <<'FL'
import paddle.fluid as fluid
reader = fluid.layers.random_data_generator(low=-2.0, high=3.0, shapes=[[2, 3], [1000, 4]], lod_levels=[0, 0])
reader = fluid.layers.double_buffer(fluid.layers.batch(fluid.layers.shuffle(reader, buffer_size=8), batch_size=2))
x, u = fluid.layers.read_file(reader)
v = (u + 2.0) / 5.0
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
s = 0.0
for i in range(20):
    a, b = exe.run(fetch_list=[x, v])
    s += b.mean()
    print(a.shape, b.shape, a.min() >= -2.0, a.max() < 3.0, b.min() >= 0.0, b.max() < 1.0)
    print(a.reshape([-1]))
m = s / 20 - 0.5
print(m < 0.02 and m > -0.02)
FL
"$FLRUN" rand1.fl --seed 1 >rand1b.out 2>&1
"$FLRUN" rand1.fl --seed 2 >rand2.out 2>&1
[ "$(grep -c '^(4, 3) (2000, 4) True True True True$' rand1.out)" = 20 ] && [ "$(tail -1 rand1.out)" = True ] &&
    [ "$(grep '^\[' rand1.out | sort -u | wc -l)" = 20 ] || { echo "FAIL: random_data_generator gave:"; head -4 rand1.out; tail -1 rand1.out; fail=1; }
cmp -s rand1.out rand1b.out || { echo "FAIL: random_data_generator: seed 1 twice differs"; fail=1; }
cmp -s rand1.out rand2.out && { echo "FAIL: random_data_generator: seeds 1 and 2 alike"; fail=1; }
rand_refused() { # NAME CALL MESSAGE
    run "$1" 1 <<FL
import paddle.fluid as fluid
r = $2
FL
    expect_err "$1" "$1.fl:2:5: error: $3"
}
rand_refused rand_lod "fluid.layers.random_data_generator(0.0, 1.0, [[2, 3]], [1])" \
    "fluid.layers.random_data_generator(lod_levels=[1]): each lod_level is 0: Fluid's generator gives tensors without LoD"
rand_refused rand_range "fluid.layers.random_data_generator(1.0, 0.0, [[2, 3]], [0])" \
    "fluid.layers.random_data_generator(low=1.0, high=0.0): low is above high"
rand_refused rand_dim "fluid.layers.random_data_generator(0.0, 1.0, [[-1, 3]], [0])" \
    "fluid.layers.random_data_generator(shapes=...): shape [-1, 3]: each dim is a positive count"
rand_refused rand_rank "fluid.layers.read_file(fluid.layers.random_data_generator(0.0, 1.0, [[3]], [0]))" \
    "fluid.layers.read_file of random_data_generator_0: shape [3] of random_data_generator has rank 1"

# Preprocessor: its block's ops run on each record open_files gives before read_file of p() gives
# it (x * 2 + 1, the sequences passed on with their LoD), over both passes, then EOF; reset() of
# p()'s reader starts the files over
run pre 0 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL, pass_num=2)
p = fluid.layers.io.Preprocessor(reader=reader, name="pre")
with p.block():
    x, ids, w = p.inputs()
    p.outputs(x * 2.0 + 1.0, ids)
r = fluid.layers.double_buffer(p())
x2, ids2 = fluid.layers.read_file(r)
seqs = fluid.layers.sequence_pool(fluid.layers.cast(ids2, "float32"), "sum")
exe = fluid.Executor(fluid.CPUPlace())
try:
    while True:
        a, s = exe.run(fetch_list=[x2, seqs])
        print(a[:, 0], s.reshape([-1]))
except fluid.core.EOFException:
    print("eof")
    r.reset()
a, = exe.run(fetch_list=[x2])
print(a[:, 0])
FL
{ for k in 1 2; do printf '[1.5 7.5] [0. 1.]\n[21.5 27.5] [100. 203.]\n[41.5 47.5] [200. 606.]\n'; done
  printf 'eof\n[1.5 7.5]\n'; } >pre.want
expect_out pre
# the LoD of a fetched sequence read_file gives: lod() and recursive_sequence_lengths() of each
# record's ids (two sequences of 1 and r + 1 rows), in a loop until EOF, and of the last record after it
run fetched_lod 0 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL)
x, ids, w = fluid.layers.read_file(reader)
exe = fluid.Executor(fluid.CPUPlace())
try:
    while True:
        a, = exe.run(fetch_list=[ids], return_numpy=False)
        print(a.lod(), a.recursive_sequence_lengths())
except fluid.core.EOFException:
    print("eof", a.lod())
FL
printf '[[0, 1, 2]] [[1, 1]]\n[[0, 1, 3]] [[1, 2]]\n[[0, 1, 4]] [[1, 3]]\neof [[0, 1, 4]]\n' >fetched_lod.want
expect_out fetched_lod
pre_refused() { # NAME LINE BODY MESSAGE
    run "$1" 1 <<FL
import paddle.fluid as fluid
reader = fluid.layers.open_files(filenames=$FILES, $DECL)
p = fluid.layers.io.Preprocessor(reader=reader)
$3
FL
    expect_err "$1" "$1.fl:$2: error: $4"
}
pre_refused pre_inputs 4:5 "x = p.inputs()" "Preprocessor.inputs() can only be called inside its block (with p.block(): ...)"
pre_refused pre_early 4:5 "r = p()" "Preprocessor 'create_custom_reader_0': its reader can only be taken after its block"
pre_refused pre_open 4:6 "with p.block():
    x = p.inputs()" "the definition of Preprocessor 'create_custom_reader_0' is incomplete: its block calls inputs() and outputs(...)"
pre_refused pre_batch 7:1 "with p.block():
    x, ids, w = p.inputs()
    p.outputs(x)
fluid.layers.batch(p(), 2)" "fluid.layers.batch() of Preprocessor 'create_custom_reader_0' is not compiled: its block's ops run on the batches read_file gives"
pre_refused pre_params 4:6 "with p.block():
    x, ids, w = p.inputs()
    p.outputs(fluid.layers.fc(x, size=2), ids)" "the block of Preprocessor 'create_custom_reader_0' makes parameters (fc_0.w_0, fc_0.b_0): Fluid runs it on each batch in a scope of its own, where they are neither initialised nor trained; apply layers with weights to read_file(p())'s outputs, after the block"

[ "$fail" = 0 ] && echo "recordio_files: ok"
exit "$fail"
