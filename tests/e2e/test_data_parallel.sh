#!/bin/sh
# test_data_parallel.sh FLRUN: exe.run of CompiledProgram(main).with_data_parallel(...) and
# ParallelExecutor.run compute what exe.run(main) computes (docs/driver.md, "Data parallel": the
# whole batch as one place on the kernel threads): the losses of 5 SGD steps of the same model
# from the same start agree within 1e-6 (relative), with 1 and with 4 kernel threads.
set -u
FLRUN=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

model() { # model RUN: the model, 5 steps each through RUN (a call taking feed and fetch_list)
    cat <<EOT
import paddle.fluid as fluid
from paddle.fluid import compiler
x = fluid.layers.data(name='x', shape=[4], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
h = fluid.layers.fc(input=x, size=8, act='tanh', param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
p = fluid.layers.fc(input=h, size=1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=p, label=y))
fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {'x': [[0.1, 0.2, 0.3, 0.4], [1.0, -1.0, 0.5, 0.0], [0.3, 0.3, -0.2, 0.9]], 'y': [[1.0], [-0.5], [2.0]]}
bs = fluid.BuildStrategy()
bs.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.AllReduce
bs.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
bs.enable_inplace = True
bs.memory_optimize = True
bs.fuse_all_reduce_ops = True
es = fluid.ExecutionStrategy()
es.num_iteration_per_drop_scope = 10
es.allow_op_delay = False
for i in range(5):
    l, = $1
    print("loss %.9g" % l)
EOT
}
model "exe.run(fluid.default_main_program(), feed=feed, fetch_list=[loss])" >plain.fl
model "exe.run(cp, feed=feed, fetch_list=[loss])" | sed 's/^for i in range(5):$/cp = compiler.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=loss.name, build_strategy=bs, exec_strategy=es, places=[fluid.CPUPlace()])\n&/' >compiled.fl
model "pe.run(fetch_list=[loss.name], feed=feed)" | sed 's/^for i in range(5):$/pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=fluid.default_main_program(), build_strategy=bs, exec_strategy=es)\n&/' >pe.fl
for threads in 1 4; do
    "$FLRUN" plain.fl --threads $threads >plain.out 2>&1 || bad "plain.fl: $(cat plain.out)"
    for f in compiled pe; do
        "$FLRUN" $f.fl --threads $threads >$f.out 2>&1 || bad "$f.fl: $(cat $f.out)"
        [ "$(grep -c '^loss ' $f.out)" = 5 ] || bad "$f.fl printed [$(cat $f.out)]"
        paste -d' ' plain.out $f.out | awk '{ d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2
                                             if (d > 1e-6 * (m > 1 ? m : 1)) bad = 1 }
                                           END { exit bad }' ||
            bad "$f.fl --threads $threads: [$(tr '\n' '|' <$f.out)] is not exe.run(main)'s [$(tr '\n' '|' <plain.out)]"
    done
done
[ $fail = 0 ] && echo "test_data_parallel: ok"
exit $fail
