"""IOR and mdtest in IO500's easy and hard shapes, on every scratch target.

The tool comes from a Spack build of spack.yaml, a module, or PATH, as the site config
says per environment; where none provides it the checks are skipped with the reason.
"""

import reframe as rfm

from reframe_checks.lib.tools import IORCheckBase, MdtestCheckBase


@rfm.simple_test
class IOR(IORCheckBase):
    workload_family = "ior"


@rfm.simple_test
class Mdtest(MdtestCheckBase):
    workload_family = "mdtest"
