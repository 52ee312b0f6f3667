"""The statistical methods of the verdicts, named once.

`scratchbench verdict --help`, the verdict files' method lines (``verdicts.NIGHTLY_METHOD``,
``verdicts.ACCEPTANCE_METHOD``) and tests/test_docs.py read these names, so that no help
text can name a method the code does not apply (as the acceptance help once named a
bootstrap and Mann-Whitney).  Each name maps to the function of reports/verdicts.py that
applies it; the test checks that it does.
"""

SEGMENTATION = "E-divisive"  # nightly: where a figure's history changes level
CORRELATED_NIGHTS = "AR(1)"  # nightly: the noise model of its z-tests
COMPARISON = "Welch's t-test"  # acceptance: the runs before against the runs after
EFFECT_SIZE = "Hedges' g"  # acceptance: the change over the run-to-run spread

#: method -> the function of reports/verdicts.py that applies it
APPLIED_BY = {
    SEGMENTATION: "_best_splits",
    CORRELATED_NIGHTS: "_noise",
    COMPARISON: "acceptance",
    EFFECT_SIZE: "acceptance",
}

#: methods the verdicts do not apply: no help text or README verdict section names them
NOT_APPLIED = (
    "permutation test",
    "bootstrap",
    "Mann-Whitney",
    "Wilcoxon",
    "CUSUM",
    "Kolmogorov-Smirnov",
)
