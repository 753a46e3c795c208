"""policyd's own CEL evaluator: cel-python's parse tree compiled to closures over native values.

- :mod:`.values` — the value model, errors, equality/ordering/arithmetic, input bounding;
- :mod:`.functions` — CEL functions and policyd's helpers, as data (name, arity, style);
- :mod:`.compile` — Lark tree -> closures; refuses what it does not implement;
- :mod:`.check` — static check of names, fields and arities against the facts schema.

Usage: ``program = compile_tree(tree)`` (a tree from cel-python's parser), then
``program.evaluate(activation)`` -> a native value, raising ``CelError`` (the CEL error
value) or ``BudgetExceeded``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lark import Tree

from policyd.core.celc.compile import Compiler, Node, Unsupported
from policyd.core.celc.values import Budget, BudgetExceeded, CelError

__all__ = ["Budget", "BudgetExceeded", "CelError", "Compiled", "Unsupported", "compile_tree"]


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compiled expression: ``root`` closure and how many variable slots it needs."""

    root: Node
    slots: int

    def evaluate(self, activation: Mapping[str, Any], budget: Budget | None = None) -> Any:
        """Evaluate on native values; raises CelError or BudgetExceeded."""
        s: list[Any] = [None] * self.slots
        s[0] = budget if budget is not None else Budget()
        try:
            return self.root(activation, s)
        except RecursionError:
            raise CelError("expression too deeply nested") from None


def compile_tree(tree: Tree[Any]) -> Compiled:
    """Compile a cel-python parse tree; raises Unsupported (with line/column) when the
    expression uses something this evaluator does not implement."""
    c = Compiler()
    root = c.node(tree, {})
    return Compiled(root, c.slots)
