"""Compiler intrinsics the kernels need and numba does not expose: a software prefetch, and a
Viterbi step over vectors of labels.

Why: training's scoring looks up, for every token, ~20 attribute rows scattered over megabytes of
row offsets and weights. Each lookup is two dependent cache misses (offset, then weights), and
the branchy loops over rows of varying length keep the processor from overlapping them. Asking
for the rows of the next sentences while scoring this one (``llvm.prefetch``, a hint that never
faults and never changes a result) overlaps those misses: about a quarter of an epoch on
CoNLL-2000 with CRFsuite's template.
"""
from __future__ import annotations

from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: The intrinsic's name mangles the pointer type: opaque pointers (LLVM ≥ 15) vs typed ``i8*``.
_PREFETCH = "llvm.prefetch.p0" if llvm_binding.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (1-D, any dtype) will be read soon: fetch its cache line into
    every cache level. No bounds check is needed: a prefetch of any address is harmless."""
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        ary = context.make_array(array_type)(context, builder, args[0])
        idx = context.cast(builder, args[1], index_type, types.intp)
        address = cgutils.get_item_pointer(context, builder, array_type, ary, [idx],
                                           wraparound=False, boundscheck=False)
        address = builder.bitcast(address, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH)
        builder.call(fn, [address, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return sig, codegen


def _running_argmax(n_vectors: int, width: int = 4, dtype=types.float64):
    """An intrinsic for one Viterbi step of ``width·n_vectors`` consecutive labels y..y+w·n−1:

        delta[t, y + j] = max over p of (delta[t − 1, p] + trans[ti, p, y + j])
        back[t, y + j]  = the lowest p reaching it

    in vectors of ``width`` floats of ``dtype`` (float64 for training, float32 for tagging; four
    float64 or eight float32 fill an AVX register; ``llvm`` picks the instructions, the build
    targets the host). Per label it is the scalar loop exactly: the same additions, p ascending,
    strict ``>`` (an ordered compare: false on ties and NaN), so the same maxima and the same
    tie-breaking. Why: the scalar loop is a chain of dependent compares per label; numba's loops do
    not vectorize it (an argmax), and Viterbi was a third of a POS training epoch and two thirds of
    tagging CoNLL-2000.

    A step only reads row t − 1 and writes row t, so steps may overlap: recomputing a label writes
    the same values. Callers cover a remainder of L with one last step ending at L.
    """
    lanes = width * n_vectors
    llvm_float = ir.DoubleType() if dtype == types.float64 else ir.FloatType()
    size = 8 if dtype == types.float64 else 4

    @intrinsic
    def step(typingctx, delta, back, trans, t, ti, y):
        ok = (isinstance(delta, types.Array) and delta.ndim == 2 and delta.layout == "C"
              and delta.dtype == dtype
              and isinstance(back, types.Array) and back.ndim == 2 and back.layout == "C"
              and back.dtype == types.int32
              and isinstance(trans, types.Array) and trans.ndim == 3 and trans.layout == "C"
              and trans.dtype == dtype
              and all(isinstance(a, types.Integer) for a in (t, ti, y)))
        if not ok:
            return None
        sig = types.void(delta, back, trans, t, ti, y)

        def codegen(context, builder, signature, args):
            i32, i64, fl = ir.IntType(32), ir.IntType(64), llvm_float
            vec, ivec = ir.VectorType(fl, width), ir.VectorType(i32, width)
            d_ary = context.make_array(signature.args[0])(context, builder, args[0])
            b_ary = context.make_array(signature.args[1])(context, builder, args[1])
            t_ary = context.make_array(signature.args[2])(context, builder, args[2])
            t_, ti_, y_ = (context.cast(builder, args[k], signature.args[k], types.int64)
                           for k in (3, 4, 5))
            L = builder.extract_value(d_ary.shape, 1)
            d_ptr = builder.bitcast(d_ary.data, fl.as_pointer())
            b_ptr = builder.bitcast(b_ary.data, i32.as_pointer())
            t_ptr = builder.bitcast(t_ary.data, fl.as_pointer())
            prev = builder.gep(d_ptr, [builder.mul(builder.sub(t_, i64(1)), L)])
            rows = builder.mul(builder.add(L, i64(1)), L)  # one (L + 1, L) slice of trans
            column = builder.gep(t_ptr, [builder.add(builder.mul(ti_, rows), y_)])
            undef = ir.Constant(vec, ir.Undefined)
            splat = ir.Constant(ivec, [0] * width)

            def broadcast(x):
                return builder.shuffle_vector(builder.insert_element(undef, x, i32(0)), undef, splat)

            entry = builder.basic_block
            loop = builder.append_basic_block("argmax.loop")
            done = builder.append_basic_block("argmax.done")
            builder.branch(loop)
            builder.position_at_end(loop)
            p = builder.phi(i64)
            best = [builder.phi(vec) for _ in range(n_vectors)]
            arg = [builder.phi(vec) for _ in range(n_vectors)]  # p as a float: same-width selects
            p.add_incoming(i64(0), entry)
            for k in range(n_vectors):
                best[k].add_incoming(ir.Constant(vec, [float("-inf")] * width), entry)
                arg[k].add_incoming(ir.Constant(vec, [0.0] * width), entry)
            d = broadcast(builder.load(builder.gep(prev, [p])))
            pv = broadcast(builder.sitofp(p, fl))
            row = builder.gep(column, [builder.mul(p, L)])
            new_best, new_arg = [], []
            for k in range(n_vectors):
                tr = builder.load(builder.bitcast(builder.gep(row, [i64(width * k)]),
                                                  vec.as_pointer()), align=size)
                s = builder.fadd(d, tr)
                better = builder.fcmp_ordered(">", s, best[k])
                new_best.append(builder.select(better, s, best[k]))
                new_arg.append(builder.select(better, pv, arg[k]))
            p_next = builder.add(p, i64(1))
            p.add_incoming(p_next, loop)
            for k in range(n_vectors):
                best[k].add_incoming(new_best[k], loop)
                arg[k].add_incoming(new_arg[k], loop)
            builder.cbranch(builder.icmp_signed("<", p_next, L), loop, done)
            builder.position_at_end(done)
            at = builder.add(builder.mul(t_, L), y_)
            d_out, b_out = builder.gep(d_ptr, [at]), builder.gep(b_ptr, [at])
            for k in range(n_vectors):
                builder.store(new_best[k], builder.bitcast(builder.gep(d_out, [i64(width * k)]),
                                                           vec.as_pointer()), align=size)
                builder.store(builder.fptosi(new_arg[k], ivec),
                              builder.bitcast(builder.gep(b_out, [i64(width * k)]), ivec.as_pointer()),
                              align=4)
            return context.get_dummy_value()

        return sig, codegen

    step.__doc__ = (f"Viterbi step of labels y..y+{lanes - 1} at position t (see `_running_argmax`); "
                    f"needs 1 ≤ L (the loop runs at least once) and y + {lanes} ≤ L.")
    return step


#: One training Viterbi step (float64) for 16, 8 and 4 consecutive labels (four, two or one vectors
#: of four lanes).
viterbi_step16 = _running_argmax(4)
viterbi_step8 = _running_argmax(2)
viterbi_step4 = _running_argmax(1)
#: One tagging Viterbi step (float32) for 16, 8 and 4 consecutive labels.
viterbi_step16_f32 = _running_argmax(2, 8, types.float32)
viterbi_step8_f32 = _running_argmax(1, 8, types.float32)
viterbi_step4_f32 = _running_argmax(1, 4, types.float32)
