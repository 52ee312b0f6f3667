#!/bin/bash
# Job side of the staging check (seed 004): stage a data set from "home" into the scratch
# directory, compute on it there, stage the results back home, verify both legs.
#
#   stage.sh SCRATCH_DIR HOME_DIR PER_JOB
#
# SCRATCH_DIR  the scratch target as the job sees it (e.g. the expanded $MYSANSCRATCH)
# HOME_DIR     holds input/, input.sha256 and results.sha256 (made by the check)
# PER_JOB      1 if the scheduler made SCRATCH_DIR for this job and removes it after;
#              0 if the script must make (and remove) its own subdirectory there
#
# Writes staging.json in the current directory; exits non-zero on any failure, with a
# one-line reason on stderr and in staging.json.
set -u
scratch=$1 home=$2 per_job=$3
report=staging.json

now() { date +%s.%N; }
file_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }'; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
fail() {
    printf '{"ok": false, "error": "%s", "scratch_dir": "%s"}\n' "$1" "${work:-$scratch}" > "$report"
    echo "stage.sh: $1" >&2
    exit "$2"
}

[ -n "$scratch" ] || fail "the scratch path is empty (is the variable the target names set in the job?)" 3
[ -d "$scratch" ] || fail "scratch directory $scratch does not exist" 3
[ -w "$scratch" ] || fail "scratch directory $scratch is not writable" 4

if [ "$per_job" = 1 ]; then
    work=$scratch                        # the scheduler's per-job directory: ours to fill
else
    work=$(mktemp -d "$scratch/sbstage.XXXXXX") || fail "cannot make a directory in $scratch" 4
    # Our own directory goes whatever happens: a failed copy on a full target must not
    # leave it full for every check after this one.
    trap 'rm -rf -- "$work"' EXIT
    trap 'exit 143' TERM INT          # scancel, a time limit: leave through the EXIT trap
fi

files=$(find "$home/input" -type f | wc -l)
bytes_in=$(file_bytes "$home/input")

# Stage in: copy the data set into scratch, then check every file arrived intact.
t0=$(now)
cp -r -- "$home/input" "$work/input" || fail "stage-in copy to $work failed (full or unwritable?)" 5
t1=$(now)
(cd "$work" && sha256sum --quiet --strict -c "$home/input.sha256") >&2 \
    || fail "stage-in checksums differ in $work/input" 6

# Compute: read every input file and write a result (bytes pairwise swapped).
mkdir "$work/results" || fail "cannot make $work/results" 5
t2=$(now)
for f in "$work"/input/*; do
    dd if="$f" of="$work/results/${f##*/}" conv=swab status=none \
        || fail "compute step failed on ${f##*/}" 5
done
t3=$(now)

# Stage out: copy the results home, then check them against the expected checksums.
t4=$(now)
cp -r -- "$work/results" "$home/results" || fail "stage-out copy to $home failed" 5
t5=$(now)
(cd "$home" && sha256sum --quiet --strict -c results.sha256) >&2 \
    || fail "stage-out checksums differ in $home/results" 6
bytes_out=$(file_bytes "$home/results")

# A directory the scheduler owns is left to the scheduler; our own one goes now.
if [ "$per_job" != 1 ]; then
    rm -rf -- "$work" || fail "cannot remove $work" 7
fi

cat > "$report" <<EOF
{"ok": true, "scratch_dir": "$work", "per_job": $per_job, "files": $files,
 "bytes_in": $bytes_in, "bytes_out": $bytes_out,
 "stage_in_s": $(elapsed "$t0" "$t1"), "compute_s": $(elapsed "$t2" "$t3"),
 "stage_out_s": $(elapsed "$t4" "$t5"),
 "checksums_in": "verified", "checksums_out": "verified"}
EOF
