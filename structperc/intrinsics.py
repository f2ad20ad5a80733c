"""Compiler intrinsics the kernels need and numba does not expose: a software prefetch.

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
