#!/bin/bash
# Job side of the staging check (seed 004): stage a data set from "home" into the scratch
# directory, compute on it there, stage the results back home, verify both legs.
#
#   stage.sh SCRATCH_DIR HOME_DIR PER_JOB
#
# SCRATCH_DIR  the scratch target as the job sees it (e.g. the expanded $MYSANSCRATCH)
# HOME_DIR     holds input/small/, input/burst/ and input/large/, input.sha256 and
#              results.sha256
#              (made by the check)
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
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a + b }'; }
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

# The data set comes in three sets, each copied and timed alone: small/ (many small
# files: a copy's per-file cost shows), burst/ (a few large files, a copy the page cache
# absorbs: its bandwidth shows) and large/ (many large files: what bytes past the
# burst's volume cost).  The check separates the costs from the timings, once what any
# copy costs before its first file (starting cp, reading the clock: an empty directory
# copied and timed the same way) is taken out.  Each copy starts with no dirty data
# waiting to be written back (an untimed sync), so no copy pays for the one before.
# The short copies (the empty one, small/ and burst/) swing most from copy to copy: each
# is made REPEATS times and its median time kept; large/ is copied once.
SETS="small burst large"
REPEATS=3
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# timed_copy LEG NAME FROM TO TIMES: copy FROM to TO TIMES times (all but the last into
# a sibling removed at once, untimed); stage_LEG_NAME_s = the median time,
# stage_LEG_NAME_runs = the times as a JSON list
timed_copy() {
    local leg=$1 name=$2 from=$3 to=$4 times=$5 i dest t0 t1 runs=()
    for ((i = 1; i <= times; i++)); do
        dest=$to
        [ "$i" -lt "$times" ] && dest="${to%/*}/.again.${to##*/}"
        sync
        t0=$(now)
        cp -r -- "$from" "$dest" \
            || fail "stage-$leg copy of $name to ${to%/*} failed (full or unwritable?)" 5
        t1=$(now)
        runs+=("$(elapsed "$t0" "$t1")")
        [ "$dest" = "$to" ] || rm -rf -- "$dest"
    done
    printf -v "stage_${leg}_${name}_s" '%s' "$(median "${runs[@]}")"
    printf -v "stage_${leg}_${name}_runs" '[%s]' "$(IFS=,; echo "${runs[*]}")"
}
# copy_sets LEG FROM TO: copy each set of FROM into TO, each timed alone; the empty copy
# into stage_LEG_start_s
copy_sets() {
    local leg=$1 from=$2 to=$3 set
    mkdir "$from/.empty" || fail "cannot make $from/.empty" 5
    timed_copy "$leg" start "$from/.empty" "$to/.empty" "$REPEATS"
    rmdir -- "$from/.empty" "$to/.empty"
    for set in $SETS; do
        timed_copy "$leg" "$set" "$from/$set" "$to/$set" "$([ "$set" = large ] && echo 1 || echo "$REPEATS")"
    done
}
for set in $SETS; do
    [ -d "$home/input/$set" ] || fail "$home/input/$set is missing: expected the data set's sets ${SETS// /, }" 3
    printf -v "files_$set" '%d' "$(find "$home/input/$set" -type f | wc -l)"
    printf -v "bytes_$set" '%s' "$(file_bytes "$home/input/$set")"
done
files=$((files_small + files_burst + files_large))
bytes_in=$((bytes_small + bytes_burst + bytes_large))

# Stage in: copy each set into scratch, then check every file arrived intact.
mkdir "$work/input" || fail "cannot make $work/input (full or unwritable?)" 5
copy_sets in "$home/input" "$work/input"
(cd "$work" && sha256sum --quiet --strict -c "$home/input.sha256") >&2 \
    || fail "stage-in checksums differ in $work/input" 6

# Compute: read every input file and write a result (bytes pairwise swapped).
mkdir -p "$work/results/small" "$work/results/burst" "$work/results/large" || fail "cannot make $work/results" 5
t2=$(now)
for f in "$work"/input/*/*; do
    rel=${f#"$work"/input/}
    dd if="$f" of="$work/results/$rel" conv=swab status=none \
        || fail "compute step failed on $rel" 5
done
t3=$(now)

# Stage out: copy each set of results home, then check them against the checksums.
mkdir "$home/results" || fail "cannot make $home/results" 5
copy_sets out "$work/results" "$home/results"
(cd "$home" && sha256sum --quiet --strict -c results.sha256) >&2 \
    || fail "stage-out checksums differ in $home/results" 6
bytes_out=$(file_bytes "$home/results")
set_json() {   # {"files", "bytes", "stage_in_s", "stage_out_s", and each copy's time} of one set
    local files=files_$1 bytes=bytes_$1 in_s=stage_in_${1}_s out_s=stage_out_${1}_s
    local in_runs=stage_in_${1}_runs out_runs=stage_out_${1}_runs
    printf '{"files": %d, "bytes": %s, "stage_in_s": %s, "stage_out_s": %s, "stage_in_runs_s": %s, "stage_out_runs_s": %s}' \
        "${!files}" "${!bytes}" "${!in_s}" "${!out_s}" "${!in_runs}" "${!out_runs}"
}

# A directory the scheduler owns is left to the scheduler; our own one goes now.
if [ "$per_job" != 1 ]; then
    rm -rf -- "$work" || fail "cannot remove $work" 7
fi

cat > "$report" <<EOF
{"ok": true, "scratch_dir": "$work", "per_job": $per_job, "files": $files,
 "bytes_in": $bytes_in, "bytes_out": $bytes_out,
 "sets": {"small": $(set_json small), "burst": $(set_json burst), "large": $(set_json large)},
 "copy_start_s": {"in": $stage_in_start_s, "out": $stage_out_start_s},
 "stage_in_s": $(add "$stage_in_small_s" "$(add "$stage_in_burst_s" "$stage_in_large_s")"),
 "compute_s": $(elapsed "$t2" "$t3"),
 "stage_out_s": $(add "$stage_out_small_s" "$(add "$stage_out_burst_s" "$stage_out_large_s")"),
 "checksums_in": "verified", "checksums_out": "verified"}
EOF
