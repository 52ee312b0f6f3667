#!/bin/bash
# Slurm TaskProlog (job user, before every task and the batch script).
# Lines printed as "export NAME=value" enter the task's environment.
echo "export MYSANSCRATCH=@SAN_ROOT@/$SLURM_JOB_ID"
echo "export LOCALSCRATCH=@LOCAL_ROOT@/$SLURMD_NODENAME"
