"""SpecializeAll: generic parsers and controls get one concrete copy per use.

Mirrors the type-argument half of p4c's ``SpecializeAll`` (frontends/p4/specialize.cpp), with
the type inference p4c's TypeInference does for those instantiations before it. BMv2 has no
generic blocks, so for ``control G<H, M>(inout H hdr, ...)`` each instantiation

- in the package (``V1Switch(P(), VC(), G<hs_t, m_t>(), ...) main;``, or ``G()`` with the type
  arguments inferred from the package's type and the other blocks passed to it, as p4c does);
- or as a local of another parser or control (``G<bit<8>>() g;``)

names a copy of ``G`` whose type parameters are replaced by those arguments. The first set of
arguments specialises the declaration in place, keeping its name (and so the control-plane names
of its tables, ``G.t``); each further set gets a copy under a fresh name. A generic parser or
control that is never instantiated is removed, as p4c's RemoveAllUnusedDeclarations removes it.

Constructor parameters of a parser or control type (``control C(...)(SubT s)`` instantiated
as ``C(Sub())``) are specialised the same way, as p4c's SpecializeAll does: the copy of ``C``
declares ``Sub() s;`` as a local instead of the parameter, so ``s.apply(...)`` is an ordinary
sub-control (or sub-parser) call that the inlining passes then expand.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import ArgTypes, Names, subst_types, unify
from softnic.compiler.ir.pretty import show_expr

BLOCKS = (ast.ControlDecl, ast.ParserDecl)


def type_key(t: ast.Type) -> str:
    return repr(t)  # structural: Loc is left out of the repr


class Specialize:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.decls: dict[str, Any] = {d.name: d for d in prog.decls if isinstance(d, ast.Decl)}
        self.generic = {d.name: d for d in prog.decls
                        if isinstance(d, BLOCKS) and (d.type_params or self.block_params(d))}
        self.originals = {n: copy.deepcopy(d) for n, d in self.generic.items()}
        # generic name -> {type-argument key: specialised name}
        self.done: dict[str, dict[tuple[str, ...], str]] = {n: {} for n in self.generic}
        self.new_decls: dict[str, list[Any]] = {n: [] for n in self.generic}

    def infer_from_ctor_args(self, g: Any, x: ast.InstantiationDecl) -> list[ast.Type]:
        """Type arguments of ``G(8w3) g;`` from its constructor arguments' declared types (the
        apply parameters cannot fix them: p4c infers from the constructor call only); [] when
        some stay unknown, for the caller's count error."""
        if not hasattr(self, "arg_types"):
            self.arg_types = ArgTypes(self.prog)
        bind: dict[str, ast.Type] = {}
        names = [p.name for p in g.ctor_params]
        for i, a in enumerate(x.args):
            j = names.index(a.name) if a.name in names else i
            if j < len(g.ctor_params):
                unify(g.ctor_params[j].type, self.arg_types.type_of(a.value, {}),
                      set(g.type_params), bind)
        if any(t not in bind for t in g.type_params):
            return []
        return [bind[t] for t in g.type_params]

    def block_params(self, d: Any) -> list[ast.Param]:
        """The constructor parameters of ``d`` whose type is a parser or control type."""
        out = []
        for p in d.ctor_params:
            t = self.decls.get(p.type.name.lstrip(".")) if isinstance(
                p.type, ast.TypeName) else None
            if isinstance(t, (ast.ParserTypeDecl, ast.ControlTypeDecl) + BLOCKS):
                out.append(p)
        return out

    def run(self) -> ast.Program:
        if not self.generic:
            return self.prog
        work: list[Any] = []
        for d in self.prog.decls:
            if isinstance(d, ast.InstantiationDecl):
                work.extend(self.package(d))
        # locals instantiating generic blocks; a specialised copy may itself contain some
        work += [d for d in self.prog.decls if isinstance(d, BLOCKS) and d.name not in
                 self.generic]
        while work:
            d = work.pop(0)
            for x in d.locals:
                if isinstance(x, ast.InstantiationDecl) and isinstance(x.type, ast.TypeName) and (
                        x.type.name.lstrip(".") in self.generic):
                    g = self.generic[x.type.name.lstrip(".")]
                    tps = self.originals[g.name].type_params
                    targs = list(x.type.args)
                    if tps and not targs:
                        targs = self.infer_from_ctor_args(self.originals[g.name], x)
                    if len(targs) != len(tps):
                        raise CompileError(x.loc, f"{g.name}: expected {len(tps)} "
                                           f"type arguments, got {len(targs)}")
                    name, new, x.args = self.specialized(g, targs, x.args, x, d)
                    x.type = ast.TypeName(name, loc=x.type.loc)
                    work.extend(new)
        out: list[Any] = []
        for d in self.prog.decls:
            if isinstance(d, BLOCKS) and d.name in self.generic:
                if self.done[d.name]:
                    out.append(d)
                    out.extend(self.new_decls[d.name])
                continue
            out.append(d)
        self.prog.decls = out
        return self.prog

    def specialized(self, g: Any, args: list[ast.Type], ctor_args: list[ast.Argument],
                    site: ast.Node, owner: Any = None
                    ) -> tuple[str, list[Any], list[ast.Argument]]:
        """The name of ``g`` specialised for the type arguments ``args`` and for the parser or
        control instances among its constructor arguments ``ctor_args``; the declarations made
        for it; and the constructor arguments left for the instantiation to pass."""
        bparams = self.block_params(self.originals[g.name])
        blocks: dict[str, ast.Expr] = {}
        shared: set[str] = set()
        rest: list[ast.Argument] = []
        if bparams:
            cps = [p.name for p in self.originals[g.name].ctor_params]
            bnames = {p.name for p in bparams}
            for i, a in enumerate(ctor_args):
                pname = a.name if a.name is not None else (cps[i] if i < len(cps) else None)
                inst = (self.check_instance_arg(a.value, g, pname, site, owner)
                        if pname in bnames and isinstance(a.value, ast.PathExpr) else None)
                if inst is not None and isinstance(self.decls.get(
                        inst.type.name.lstrip(".")), ast.ParserDecl):
                    # a sub-parser instance: parsers keep no state across the inlining
                    # except in their own instances (value sets, externs), so one without
                    # any is the same as a fresh copy of it
                    sub = self.decls[inst.type.name.lstrip(".")]
                    if any(isinstance(x, ast.InstantiationDecl) for x in sub.locals):
                        raise CompileError(a.loc, f"{a.value.name}: passing a parser instance "
                                           "that has instances of its own as a constructor "
                                           "argument is unsupported by softnic; pass a new "
                                           f"instance instead, e.g. {sub.name}()")
                    blocks[pname] = ast.Call(ast.PathExpr(sub.name, loc=a.loc),
                                             copy.deepcopy(inst.args),
                                             list(inst.type.args), loc=a.loc)
                elif pname in bnames and isinstance(a.value, ast.PathExpr):
                    # an instance declared earlier (``Inc() inc; Twice(inc) tw;``): the same
                    # instance, shared, so it stays a constructor argument that the inliner
                    # binds to the caller's instance
                    rest.append(ast.Argument(a.value, pname, loc=a.loc))
                    shared.add(pname)
                elif pname in bnames:
                    if not (isinstance(a.value, ast.Call) and self.block_of(a.value) is not None):
                        raise CompileError(a.loc, f"{pname}: expected a parser or control "
                                           "instantiation, e.g. Sub() or an instance's name")
                    blocks[pname] = a.value
                else:
                    # by name: the positions change once the block parameters are gone
                    rest.append(ast.Argument(a.value, pname, loc=a.loc))
            missing = bnames - set(blocks) - shared
            if missing:
                raise CompileError(site.loc, f"{g.name}: no argument for constructor parameter "
                                   f"{sorted(missing)[0]}")
        else:
            rest = list(ctor_args)
        key = tuple(type_key(a) for a in args) + tuple(
            f"{k}={show_expr(v)}" for k, v in sorted(blocks.items()))
        seen = self.done[g.name]
        if key in seen:
            return seen[key], [], rest
        bind = dict(zip(self.originals[g.name].type_params, args, strict=True))
        if not seen:
            target = g
            name = g.name
        else:
            target = copy.deepcopy(self.originals[g.name])
            name = self.names.fresh(g.name)
            target.name = name
            self.new_decls[g.name].append(target)
        seen[key] = name
        for f in ("params", "ctor_params", "locals", "states"):
            if hasattr(target, f):
                setattr(target, f, [subst_types(x, bind) for x in getattr(target, f)])
        if isinstance(target, ast.ControlDecl):
            target.apply = subst_types(target.apply, bind)
        target.type_params = []
        if blocks:
            target.ctor_params = [p for p in target.ctor_params if p.name not in blocks]
            insts = []
            for p in bparams:
                c = blocks[p.name]
                assert isinstance(c.target, ast.PathExpr)
                insts.append(ast.InstantiationDecl(
                    p.name, ast.TypeName(c.target.name, list(c.type_args), loc=c.loc),
                    copy.deepcopy(c.args), loc=c.loc))
            target.locals = insts + list(target.locals)
        return name, [target], rest

    def check_instance_arg(self, e: ast.PathExpr, g: Any, pname: str, site: ast.Node,
                           owner: Any) -> ast.InstantiationDecl | None:
        """``e``, passed for the parser or control parameter ``pname`` of ``g``, must name an
        instance declared before ``site`` in the same block ``owner`` (or a constructor
        parameter of ``owner`` of a parser or control type, itself bound to an instance)."""
        want = next(p.type for p in self.originals[g.name].ctor_params if p.name == pname)
        have: ast.Type | None = None
        inst: ast.InstantiationDecl | None = None
        if owner is not None:
            earlier = owner.locals[:next((i for i, x in enumerate(owner.locals) if x is site),
                                         len(owner.locals))]
            for x in earlier:
                if isinstance(x, ast.InstantiationDecl) and x.name == e.name:
                    have, inst = x.type, x
            if have is None:
                have = next((p.type for p in self.block_params(owner) if p.name == e.name),
                            None)
        hname = have.name.lstrip(".") if isinstance(have, ast.TypeName) else None
        if hname is None or not isinstance(self.decls.get(hname), (
                ast.ParserTypeDecl, ast.ControlTypeDecl) + BLOCKS):
            raise CompileError(e.loc, f"{e.name}: expected a parser or control instance "
                               f"declared before {g.name}'s instantiation, or an "
                               "instantiation, e.g. Sub()")
        wname = want.name.lstrip(".") if isinstance(want, ast.TypeName) else None
        if isinstance(self.decls.get(wname or ""), BLOCKS) and wname != hname:
            raise CompileError(e.loc, f"{e.name}: Cannot unify {hname} to {wname} "
                               f"(constructor parameter {pname} of {g.name})")
        return inst

    # ------------------------------------------------------------------ the package

    def package(self, d: ast.InstantiationDecl) -> list[Any]:
        """Specialise the blocks passed to a package; returns the declarations made."""
        if not isinstance(d.type, ast.TypeName):
            return []
        pkg = self.decls.get(d.type.name.lstrip("."))
        if not isinstance(pkg, ast.PackageDecl):
            return []
        ctors = [a.value if isinstance(a.value, ast.Call) else None for a in d.args]
        if not any(c is not None and self.block_of(c) in self.generic.values() for c in ctors):
            return []
        pvars = set(pkg.type_params)
        pbind: dict[str, ast.Type] = {}
        if d.type.args:
            if len(d.type.args) != len(pkg.type_params):
                return []  # the checker reports the count
            pbind = dict(zip(pkg.type_params, d.type.args, strict=True))
        params = self.bind_package_args(pkg, d)
        # the type arguments of the package, from the blocks that are not generic
        for p, c in params:
            blk = self.block_of(c)
            if blk is None or blk.type_params:
                continue
            for pat, actual in self.param_pairs(p, blk):
                unify(pat, actual, pvars, pbind)
        made: list[Any] = []
        for p, c in params:
            g = self.block_of(c)
            if g is None or g.name not in self.generic:
                continue
            assert c is not None
            orig = self.originals[g.name]  # g itself may be specialised in place already
            tps = orig.type_params
            gbind: dict[str, ast.Type] = {}
            if c.type_args:
                if len(c.type_args) != len(tps):
                    raise CompileError(c.loc, f"{g.name}: expected {len(tps)} type "
                                       f"arguments, got {len(c.type_args)}")
                gbind = dict(zip(tps, c.type_args, strict=True))
            else:
                for pat, actual in self.param_pairs(p, orig):
                    unify(actual, subst_types(copy.deepcopy(pat), pbind), set(tps), gbind)
            missing = [t for t in tps if t not in gbind]
            if missing:
                raise CompileError(c.loc, f"{g.name}: cannot infer type argument "
                                   f"{missing[0]}; write them explicitly, "
                                   f"e.g. {g.name}<...>()")
            name, new, c.args = self.specialized(g, [gbind[t] for t in tps], c.args, c)
            made.extend(new)
            c.target = ast.PathExpr(name, loc=c.target.loc)
            c.type_args = []
        return made

    def bind_package_args(self, pkg: ast.PackageDecl, d: ast.InstantiationDecl
                          ) -> list[tuple[ast.Param, ast.Call | None]]:
        out: list[tuple[ast.Param, ast.Call | None]] = []
        names = [p.name for p in pkg.params]
        for i, a in enumerate(d.args):
            j = names.index(a.name) if a.name in names else i
            if j < len(pkg.params):
                out.append((pkg.params[j], a.value if isinstance(a.value, ast.Call) else None))
        return out

    def block_of(self, c: ast.Call | None) -> Any:
        if c is None or not isinstance(c.target, ast.PathExpr):
            return None
        b = self.decls.get(c.target.name.lstrip("."))
        return b if isinstance(b, BLOCKS) else None

    def param_pairs(self, p: ast.Param, blk: Any) -> list[tuple[ast.Type, ast.Type]]:
        """(the package parameter's view of each apply parameter type, the block's own)."""
        if not isinstance(p.type, ast.TypeName):
            return []
        bt = self.decls.get(p.type.name.lstrip("."))
        if not isinstance(bt, (ast.ParserTypeDecl, ast.ControlTypeDecl)):
            return []
        tb = dict(zip(bt.type_params, p.type.args, strict=False))
        return [(subst_types(copy.deepcopy(q.type), tb), r.type)
                for q, r in zip(bt.params, blk.params, strict=False)]


def specialize(prog: ast.Program) -> ast.Program:
    return Specialize(prog).run()
