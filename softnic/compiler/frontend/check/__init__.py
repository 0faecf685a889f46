"""Name resolution and type checking (the semantic half of the P4_16 front end).

The checker walks every declaration once, resolves names through :class:`Scope` chains, computes
the type of every expression with P4_16's rules and records its findings keyed by ``id(node)``:

- ``types[id(expr)]``: the expression's :mod:`types` type;
- ``syms[id(path_or_member)]``: the symbol a name resolved to;
- ``calls[id(call)]``: which action/function/extern/method a call invokes, with the argument
  bound to each parameter and the type variables inferred.

The lowering reads these tables instead of re-deriving them, so "what does this name mean" is
decided in exactly one place. User errors raise :class:`CompileError` at the offending node, with
p4c's wording where we know it. Restrictions of p4c-bm2-ss (e.g. no conditional extern calls in
actions) are enforced here too, so an unsupported program never reaches the lowering.

Where things are (one module per job):

- ``checker``: the :class:`Checker` entry point, assembled from the mixins below;
- ``state``: the tables above and the rest of the checker's working state;
- ``declarations``: what each declaration binds, and under which name;
- ``resolve``: syntactic types to types, names to symbols;
- ``constants`` / ``fold``: compile-time values (``fold`` is shared with the lowering);
- ``expressions``: typing of operators, members, slices, casts, width inference;
- ``assign``: assignability, left-values, literal truncation;
- ``calls`` / ``callinfo``: overloads, argument binding, type-variable inference;
- ``statements``: statements by context; ``side_effects``: the p4c-bm2-ss rule against
  conditional side effects in actions;
- ``functions``, ``parsers``, ``controls``, ``tables``: the bodies of those declarations;
- ``helpers``: error construction, annotations, width limits.
"""

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.check.callinfo import CallInfo, ParamT
from softnic.compiler.frontend.check.calls import BUILTIN_METHODS, has_typevar, subst
from softnic.compiler.frontend.check.checker import Checker
from softnic.compiler.frontend.check.fold import fit, fold_binary, fold_cast, mask, wrap_signed
from softnic.compiler.frontend.check.helpers import (
    MAX_WIDTH,
    annotation,
    annotation_string,
    check_width,
)
from softnic.compiler.frontend.check.side_effects import (
    CONDITIONAL_IN_ACTION,
    SIDE_EFFECT_BUILTINS,
    contains_side_effect_in_ternary,
    expr_has_call,
)

__all__ = [
    "BUILTIN_METHODS",
    "CONDITIONAL_IN_ACTION",
    "MAX_WIDTH",
    "SIDE_EFFECT_BUILTINS",
    "CallInfo",
    "Checker",
    "CompileError",
    "ParamT",
    "annotation",
    "annotation_string",
    "check_width",
    "contains_side_effect_in_ternary",
    "err",
    "expr_has_call",
    "fit",
    "fold_binary",
    "fold_cast",
    "has_typevar",
    "mask",
    "subst",
    "wrap_signed",
]
