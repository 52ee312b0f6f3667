"""IOR and mdtest in IO500's easy and hard shapes, on every scratch target.

The tool comes from a Spack build of spack.yaml, a module, or PATH, as the site config
says per environment.  A route the site asks for that does not work fails with its
cause; an environment that asks for none and has no tool on PATH is skipped with the
reason (see reframe_checks/lib/tools.py).
"""

import reframe as rfm

from reframe_checks.lib.tools import IORCheckBase, MdtestCheckBase


@rfm.simple_test
class IOR(IORCheckBase):
    workload_family = "ior"


@rfm.simple_test
class Mdtest(MdtestCheckBase):
    workload_family = "mdtest"
