"""Staging to the per-job scratch directory (seed 004): stage in, compute, stage out,
checksums both ways, each leg timed; then confirm the scheduler removed the per-job
directory."""

import reframe as rfm
import reframe.utility.udeps as udeps
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.staging import ScratchRemovedCheckBase, StagingCheckBase
from reframe_checks.lib.targets import TAGS, declared_targets


@rfm.simple_test
class StageInOut(StagingCheckBase):
    pass


class PerJobScratchRemoved(ScratchRemovedCheckBase):
    scratch_target = parameter(declared_targets(per_job=True))
    workload_tag = parameter(TAGS)

    @run_after("init")
    def follow_the_staging_job(self):
        self.valid_systems = [f"+scratch_{self.scratch_target}"]
        self.tags = {self.workload_tag, f"fs:{self.scratch_target}"}
        variant = StageInOut.get_variant_nums(scratch_target=self.scratch_target,
                                              workload_tag=self.workload_tag)[0]
        self.staging_test = StageInOut.variant_name(variant)
        self.depends_on(self.staging_test, udeps.by_env)


# Only sites with a per-job scratch directory have something to confirm (an empty
# parameter would be an error under --warn-as-error).
if declared_targets(per_job=True):
    rfm.simple_test(PerJobScratchRemoved)
