#!/bin/sh
# contrib.Calibrator end to end, in a temporary folder (the calibrations write model folders):
# tests/e2e/calib/calib_memory_ops.fl runs the memory ops in int8 (concat after requantize,
# transpose, average pool2d, reshape) and prints the int8 program; debug=True prints it and
# writes model.dot; then on Fashion-MNIST
# (tests/e2e/calib/calib_fashion.fl, as Fluid's test_calibration.py): a small conv net trained,
# saved and loaded; calibrated with algo 'direct' (every conv2d in int8) and 'KL' (from the second); the saved int8 programs hold quantize,
# conv2d_int8 and int8 pool2d ops and their accuracy on 2000 test images is within 1 point of the
# float model's; the float model learned (above 0.7, from 0.1 by chance).
# Usage: calibrator.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$T" || fail "cd"
# the memory ops in int8 (no data needed)
"$FLRUN" "$ROOT/tests/e2e/calib/calib_memory_ops.fl" > mem.log 2> mem.err || { cat mem.log mem.err; fail "calib_memory_ops.fl"; }
cat > mem.want <<'END'
['conv2d', 'elementwise_add', 'relu', 'quantize', 'conv2d_int8', 'conv2d_int8', 'requantize', 'requantize', 'concat', 'transpose', 'pool2d', 'reshape', 'dequantize', 'mul', 'elementwise_add', 'softmax']
concat reads ['conv2d_3.tmp_0.int8.requantized', 'conv2d_5.tmp_0.int8.requantized']
dequantize ['reshape_0.tmp_0.int8', 'concat_0.tmp_0.scale'] -> ['reshape_0.tmp_0']
saved: quantize conv2d_int8 concat pool2d dequantize
direct: close
KL: close
END
diff mem.want mem.log || fail "calib_memory_ops.fl: the int8 program and its closeness to the float one"
# debug=True, as Fluid's: the int8 program printed and written as Graphviz DOT to model.dot
cat > dbg.fl <<'END'
import paddle.fluid as fluid
import numpy as np
img = fluid.layers.data(name='img', shape=[2, 8, 8], dtype='float32')
c1 = fluid.layers.conv2d(img, num_filters=4, filter_size=3, padding=1, act='relu')
pred = fluid.layers.conv2d(c1, num_filters=3, filter_size=3, padding=1)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
prog = fluid.default_main_program().clone(for_test=True)
cal = fluid.contrib.Calibrator(program=prog, pretrained_model="m", algo="direct", exe=exe, output="int8",
                               feed_var_names=['img'], fetch_list=[pred], debug=True)
exe.run(cal.sampling_program, feed={'img': np.ones([2, 2, 8, 8]).astype('float32')}, fetch_list=[pred])
cal.sample_data()
cal.save_int8_model()
print("saved")
END
"$FLRUN" dbg.fl > dbg.log 2> dbg.err || { cat dbg.log dbg.err; fail "debug=True"; }
[ "$(head -1 model.dot 2>/dev/null)" = "digraph fluidc {" ] && grep -q 'conv2d_int8' model.dot ||
    fail "debug=True: model.dot is not the int8 program's DOT"
grep -q '^== program ==' dbg.log && grep -q 'conv2d_int8' dbg.log && [ "$(tail -1 dbg.log)" = saved ] ||
    { cat dbg.log; fail "debug=True: the int8 program printed before the save"; }
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "skipped: Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
sh "$ROOT/scripts/make_dataset_cache.sh" "$T/cache" > /dev/null || fail "make_dataset_cache.sh"
export FLUIDC_DATA_HOME=$T/cache
"$FLRUN" "$ROOT/tests/e2e/calib/calib_fashion.fl" > calib.log 2> calib.err || { cat calib.log calib.err; fail "calib_fashion.fl"; }
cat calib.log
grep -q '^direct: quantize conv2d_int8 .* quantize pool2d conv2d_int8 pool2d dequantize ' calib.log ||
    fail "direct with first_conv_int8: both conv2d in int8, the pool2d between them on uint8"
grep -q '^KL: conv2d .* quantize conv2d_int8 pool2d dequantize ' calib.log ||
    fail "KL: the second conv2d in int8 and its int8 output pooled"
[ "$(grep -c 'int8 accuracy' calib.log)" = 2 ] || fail "the two int8 models' accuracy"
[ -f int8_direct/__model__ ] && [ -f int8_KL/__model__ ] || fail "the int8 models' files"
ls int8_direct | grep -q '\.scale$' || fail "the scales saved with the int8 model"
echo "calibrator: ok"
