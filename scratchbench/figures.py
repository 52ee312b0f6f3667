"""What a figure means, declared once by the check that produces it.

A check declares each performance variable next to the function that computes it
(``reframe_checks.lib.base.figure``): its label in words, its unit, whether higher or
lower is better, and, for the few figures the pages lead with, a headline naming the
workload in words.  The declaration travels in ReFrame's run report (a test variable),
the history store keeps it with each figure, and the pages and verdicts read it from
there, so renaming a check or adding a mode never silently empties a page.

This module is the one format both sides agree on.
"""

from dataclasses import asdict, dataclass

BETTER = ("higher", "lower")


@dataclass(frozen=True)
class FigureDeclaration:
    """One performance variable of one check variant."""

    unit: str
    label: str            # what the number is, in words: "Write bandwidth, slowest rank"
    better: str           # "higher" or "lower"
    headline: str = ""    # the workload in words when this is a headline figure, else ""

    def __post_init__(self):
        if self.better not in BETTER:
            raise ValueError(f"figure '{self.label}': better={self.better!r}, expected "
                             "'higher' or 'lower'")
        if not self.unit or not self.label:
            raise ValueError(f"figure declaration {self!r}: unit and label are required")

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data, where="figure declaration"):
        """From the dict a run report or the store holds; a one-line error if malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping, got {type(data).__name__}")
        try:
            return cls(unit=str(data["unit"]), label=str(data["label"]),
                       better=data["better"], headline=str(data.get("headline") or ""))
        except KeyError as exc:
            raise ValueError(f"{where}: no '{exc.args[0]}' field") from None
