"""Staging to the per-job scratch directory (seed 004): stage in, compute, stage out,
checksums both ways, each leg timed; then confirm the scheduler removed the per-job
directory."""

import reframe as rfm
import reframe.utility.udeps as udeps
from reframe.core.builtins import run_after

from reframe_checks.lib.staging import ScratchRemovedCheckBase, StagingCheckBase
from reframe_checks.lib.targets import per_job_somewhere
from scratchbench.sites import TAGS


@rfm.simple_test
class StageInOut(StagingCheckBase):
    headline_when = {}  # staging leads the pages on every target


@rfm.simple_test
class PerJobScratchRemoved(ScratchRemovedCheckBase):
    @run_after("init")
    def follow_the_staging_job(self):
        self.valid_systems = [f"+scratch_{self.scratch_target}"]
        self.tags = {*TAGS, f"fs:{self.scratch_target}"}
        # Only a per-job directory has a removal to confirm; elsewhere this case is
        # skipped at setup with the reason, and depends on nothing (a skipped dependent
        # would hold back its parent's clean-up in ReFrame).
        if per_job_somewhere(self.scratch_target):
            variant = StageInOut.get_variant_nums(scratch_target=self.scratch_target)[0]
            self.staging_test = StageInOut.variant_name(variant)
            self.depends_on(self.staging_test, udeps.by_env)
