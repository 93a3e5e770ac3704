"""How numba compiles the engine's loop: numba's own pipeline, with two changes that
make a compile cheaper without changing what it computes.

The loop is one large function after inlining (``memsim.engine.loop``): tens of
thousands of numba IR statements, thousands of blocks. Two parts of numba's pipeline
grow faster than linearly with that size, and they were most of a compile's time and
all of its memory beyond a few hundred MB:

- **Liveness** (``numba.core.analysis.compute_live_map``), run some thirty times per
  compile (after inlining, by the rewrites, by dead-code elimination): numba keeps,
  for every block, the set of every variable defined or used on any path into it, as
  a Python ``set``. With 5,000 blocks and 20,000 variables those sets held tens of
  millions of entries: gigabytes, and 20-40 s of set unions per compile.
  :func:`compute_live_map` computes the same map with one Python integer per block as
  a bit set (a test compares the two on random control-flow graphs).
- **Copies of large tuples.** The engine's state travels as named tuples of dozens of
  arrays (``State``, ``Tables``, the mechanisms' states in ``X``). numba gives every
  variable a stack slot and, at every inlined call, copies its arguments into the
  callee's variables: a copy of ``State`` is some 480 machine words. Every
  ``S.field`` loaded the whole tuple to read one field. LLVM's scalar replacement of
  aggregates then split each of those hundreds of copies into hundreds of scalars:
  78% of LLVM's time in the plain loop. :class:`TupleLowering` lowers a variable that is
  assigned once from another such variable as the same stack slot (an alias), a
  variable assigned once from a field of one as a pointer into it (a view), and a
  field read as a load of that field alone. The optimised machine code is the same
  (the plain loop's assembly is identical but for numba's symbol numbering); only the
  work LLVM did to get there is gone.

A third change makes the compiled code itself faster. numba indexes an array with a
signed integer as Python does: a negative index counts from the end, so every access
computes ``i + n if i < 0 else i`` and keeps the array's length at hand. In the loop,
with some sixty arrays, those lengths crowd the registers: LLVM spills values to a stack
frame of several kilobytes and reloads them in the hot path, and which ones it spills
(hence the loop's speed) changed by up to a third with unrelated edits. The engine never
indexes from the end (an index below zero is a bug there, as in C), so
:class:`TupleLower` lowers its functions' integer indices as they are
(:func:`_index_as_is`): 5-50 % faster on the plain loop, measured with
``benchmarks/ab_speed.py``. ``NUMBA_BOUNDSCHECK=1`` turns a negative index into an
IndexError instead (a test runs the engine so).

These apply to memsim's compiled functions only (``memsim.engine.jit``'s option
sets name :class:`Compiler` as their pipeline); other numba code in the process
compiles as ever, except that the liveness analysis is swapped for the duration of a
memsim compile, which holds numba's global compiler lock. They rely on numba
internals that have been stable for years; where they are not found (another numba
version), numba's own code runs and a compile only takes longer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from contextlib import contextmanager

import numpy as np
from numba.core import analysis, cgutils, errors, ir, ir_utils, lowering, ssa, types
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import register_pass
from numba.core.typed_passes import NativeLowering
from numba.np import arrayobj


def compute_live_map(cfg, blocks, var_use_map, var_def_map):
    """numba's ``analysis.compute_live_map`` on bit sets: the variables live at the
    entry of each block (a dict of sets of names, as numba's). The same fixed points,
    in the same block orders: first the variables defined or used on some path into
    each block, then liveness pushed backwards, both until nothing changes."""
    topo = cfg.topo_order()
    index: dict = {}
    names: list = []

    def bits(group) -> int:
        value = 0
        for name in group:
            i = index.get(name)
            if i is None:
                i = index[name] = len(names)
                names.append(name)
            value |= 1 << i
        return value

    use = {b: bits(s) for b, s in var_use_map.items()}
    define = {b: bits(s) for b, s in var_def_map.items()}
    successors = {b: [s for s, _ in cfg.successors(b)] for b in topo}
    predecessors = {b: [p for p, _ in cfg.predecessors(b)] for b in topo}

    reach: defaultdict = defaultdict(int)  # defined or used on a path into the block
    changed = True
    while changed:
        changed = False
        for b in topo:
            r = reach[b] | define[b] | use[b]
            if r != reach[b]:
                reach[b] = r
                changed = True
            for s in successors[b]:
                if reach[s] | r != reach[s]:
                    reach[s] |= r
                    changed = True

    live = {b: use[b] for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(topo):
            here = live[b]
            for p in predecessors[b]:
                new = live[p] | (here & reach[p] & ~define[p])
                if new != live[p]:
                    live[p] = new
                    changed = True

    nbytes = (len(names) + 7) // 8
    table = np.array(names, dtype=object)
    out = {}
    for b, value in live.items():
        if not value:
            out[b] = set()
            continue
        flags = np.unpackbits(np.frombuffer(value.to_bytes(nbytes, "little"), np.uint8),
                              bitorder="little")
        out[b] = set(table[np.flatnonzero(flags)].tolist())
    return out


def _rewrite_blocks(blocks, labels, states, handler):
    """numba's ``ssa._run_block_rewrite`` over the blocks ``labels`` only; the others
    stay as they are (the same objects)."""
    out = dict(blocks)
    for label in labels:
        block = blocks[label]
        states["label"] = label
        states["block"] = block
        new = ir.Block(scope=block.scope, loc=block.loc)
        new.body = list(ssa._run_ssa_block_pass(states, block, handler))
        out[label] = new
    return out


def run_ssa(blocks):
    """numba's ``ssa._run_ssa`` (SSA reconstruction, Choi et al.), visiting for each
    variable assigned more than once only the blocks that mention it. numba rewrites
    every block of the function for each such variable, and its handlers leave a
    statement that does not mention the variable as it is; so visiting only the blocks
    that mention it gives the same IR (a test compares the two) in a fraction of the
    time: each inlined copy of a helper adds its reassigned locals to the variables to
    fix, and the loop's thousands of blocks were rewritten once for each of them."""
    if not blocks:
        return {}
    cfg = ssa.compute_cfg_from_blocks(blocks)
    df_plus = ssa._iterated_domfronts(cfg)
    violators = ssa._find_defs_violators(blocks, cfg)
    cache_list_vars = ssa._CacheListVars()
    wanted = set(violators)
    mentioned_in = defaultdict(list)  # variable -> labels of the blocks that mention it
    for label, block in blocks.items():
        seen = set()
        for stmt in block.body:
            for var in stmt.list_vars():
                if var.name in wanted and var.name not in seen:
                    seen.add(var.name)
                    mentioned_in[var.name].append(label)
    for name in violators:
        labels = mentioned_in[name]
        # fresh names for its assignments (numba's _fresh_vars)
        states = ssa._make_states(blocks)
        states.update(varname=name, defmap=defaultdict(list))
        blocks = _rewrite_blocks(blocks, labels, states, ssa._FreshVarHandler())
        defmap = states["defmap"]
        # its uses to the reaching definitions, with phi nodes (numba's _fix_ssa_vars)
        states = ssa._make_states(blocks)
        states.update(varname=name, defmap=defmap, phimap=defaultdict(list), cfg=cfg,
                      phi_locations=ssa._compute_phi_locations(df_plus, defmap))
        blocks = _rewrite_blocks(blocks, labels, states, ssa._FixSSAVars(cache_list_vars))
        for label, phis in states["phimap"].items():
            blocks[label].body = phis + blocks[label].body
    if ssa.compute_cfg_from_blocks(blocks) != cfg:
        raise errors.CompilerError("CFG mutated in SSA pass")
    return blocks


@contextmanager
def _faster_analyses():
    """numba's liveness analysis and SSA reconstruction swapped for
    :func:`compute_live_map` and :func:`run_ssa`, while one of memsim's functions
    compiles (numba holds its global compiler lock meanwhile)."""
    saved = analysis.compute_live_map, ir_utils.compute_live_map, ssa._run_ssa
    analysis.compute_live_map = ir_utils.compute_live_map = compute_live_map
    ssa._run_ssa = run_ssa
    try:
        yield
    finally:
        analysis.compute_live_map, ir_utils.compute_live_map, ssa._run_ssa = saved


def _field(ty, expr) -> int | None:
    """The index of the field that ``expr`` (a getattr or a constant index) reads from
    a value of tuple type ``ty``, or None."""
    if not isinstance(ty, types.BaseTuple):
        return None
    if expr.op == "getattr":
        if isinstance(ty, types.BaseNamedTuple) and expr.attr in ty.fields:
            return ty.fields.index(expr.attr)
        return None
    index = expr.index
    if (expr.op == "static_getitem" and isinstance(index, int)
            and not isinstance(index, bool) and -len(ty) <= index < len(ty)):
        return index % len(ty)
    return None


class TupleLower(lowering.Lower):
    """numba's lowering, with tuples read in place (the module docstring): aliases,
    views and field loads. Only without reference counting (``_nrt=False``, as every
    engine function is): with it, a copy is also an incref that must stay."""

    def init(self):
        super().init()
        self._alias: dict = {}  # variable -> the variable whose slot it shares
        self._view: dict = {}  # variable -> (tuple variable, field index)
        self._kept: set = set()
        if self.context.enable_nrt:
            return
        assigned: Counter = Counter()
        value_of = {}
        for block in self.blocks.values():
            for inst in block.body:
                if isinstance(inst, ir.Assign):
                    assigned[inst.target.name] += 1
                    value_of[inst.target.name] = inst.value
        for name, value in value_of.items():
            if assigned[name] != 1:
                continue
            ty = self.typeof(name)
            if isinstance(value, ir.Var):
                if (isinstance(ty, types.BaseTuple) and assigned[value.name] == 1
                        and self.typeof(value.name) == ty):
                    self._alias[name] = value.name
            elif (isinstance(value, ir.Expr) and value.op in ("getattr", "static_getitem")
                  and assigned[value.value.name] == 1):
                parent = self.typeof(value.value.name)
                i = _field(parent, value)
                if i is not None and parent.types[i] == ty:
                    self._view[name] = (value.value.name, i)
        for name in list(self._alias):
            root = name
            while root in self._alias:
                root = self._alias[root]
            self._alias[name] = root
        # every variable involved keeps a stack slot (numba keeps a variable used in
        # one block only in a register, which a pointer cannot point into)
        self._kept = (set(self._alias) | set(self._alias.values()) | set(self._view)
                      | {self._alias.get(p, p) for p, _ in self._view.values()})
        for name in self._kept:
            self._singly_assigned_vars.discard(name)

    def getvar(self, name):
        name = self._alias.get(name, name)
        if name in self._view and name not in self.varmap:
            parent, i = self._view[name]
            slot = self.getvar(parent)
            with self.builder.goto_entry_block():  # (dominates every use)
                self.varmap[name] = cgutils.gep_inbounds(self.builder, slot, 0, i)
        return super().getvar(name)

    def loadvar(self, name):
        return super().loadvar(self._alias.get(name, name))

    def setup_function(self, fndesc):
        super().setup_function(fndesc)
        _AS_IS.append(self.function)  # (until lower() returns: _index_as_is)

    def lower(self):
        try:
            super().lower()
        finally:
            _AS_IS[:] = [f for f in _AS_IS if f is not self.function]

    def lower_inst(self, inst):
        if isinstance(inst, ir.Assign) and (inst.target.name in self._alias
                                            or inst.target.name in self._view):
            return  # (nothing to copy: the slot is shared)
        if isinstance(inst, ir.Del) and inst.value in self._kept:
            return  # (no reference to drop; zeroing the slot would clear a shared one)
        super().lower_inst(inst)

    def lower_expr(self, resty, expr):
        if (expr.op in ("getattr", "static_getitem") and not self.context.enable_nrt
                and not isinstance(resty, types.BoundFunction)):
            name = self._alias.get(expr.value.name, expr.value.name)
            ty = self.typeof(name)
            i = _field(ty, expr)
            if i is not None and name not in self._blk_local_varmap:
                field = cgutils.gep_inbounds(self.builder, self.getvar(name), 0, i)
                return self.context.cast(self.builder, self.builder.load(field),
                                         ty.types[i], resty)
        return super().lower_expr(resty, expr)


# The LLVM functions TupleLower is lowering now: their integer indices are used as they
# are (other numba functions compiled meanwhile, e.g. a library routine lowered inside
# an engine function, keep numba's negative-index handling).
_AS_IS: list = []
_fix_integer_index = arrayobj.fix_integer_index


def _index_as_is(context, builder, idxty, idx, size):
    """numba's ``fix_integer_index`` (an integer index made an intp, counted from the
    end if negative), without the count from the end inside an engine function."""
    if idxty.signed and any(f is builder.function for f in _AS_IS):
        return context.cast(builder, idx, idxty, types.intp)
    return _fix_integer_index(context, builder, idxty, idx, size)


@register_pass(mutates_CFG=True, analysis_only=False)
class TupleLowering(NativeLowering):
    """numba's native lowering pass with :class:`TupleLower`."""

    _name = "memsim_tuple_lowering"

    @property
    def lowering_class(self):
        return TupleLower


class Compiler(CompilerBase):
    """numba's nopython pipeline with :class:`TupleLowering` for its lowering pass,
    run with the bit-set liveness analysis."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(TupleLowering if p is NativeLowering else p, text)
                     for p, text in pm.passes]
        pm.finalize()
        return [pm]

    def _compile_core(self):
        with _faster_analyses():
            return super()._compile_core()


def _supported() -> bool:
    """Whether this numba has the internals the two changes rely on."""
    return (hasattr(lowering.Lower, "_find_singly_assigned_variable")
            and isinstance(getattr(NativeLowering, "lowering_class", None), property)
            and callable(getattr(analysis, "compute_live_map", None))
            and callable(getattr(ir_utils, "compute_live_map", None))
            and all(callable(getattr(ssa, name, None)) for name in (
                "_run_ssa", "_run_ssa_block_pass", "_iterated_domfronts",
                "_find_defs_violators", "_make_states", "_compute_phi_locations",
                "compute_cfg_from_blocks"))
            and all(hasattr(ssa, name) for name in (
                "_CacheListVars", "_FreshVarHandler", "_FixSSAVars"))
            and hasattr(CompilerBase, "_compile_core")
            and callable(getattr(arrayobj, "fix_integer_index", None))
            and callable(getattr(lowering.Lower, "setup_function", None)))


# numba options that select this pipeline (none where numba lacks the internals)
OPTIONS = {"pipeline_class": Compiler} if _supported() else {}
if OPTIONS:  # (numba's array indexing looks the function up on each use)
    arrayobj.fix_integer_index = _index_as_is
