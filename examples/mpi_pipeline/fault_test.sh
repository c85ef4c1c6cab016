#!/usr/bin/env bash
# The failing-peer tests of the MPI example (docs/robustness.md), run by ctest as mpi.fault.*:
#   fault_test.sh LIMIT EXPECT MPIEXEC "FLAGS" NP EXE ARGS...
# runs `MPIEXEC FLAGS -np NP EXE ARGS...` under `timeout LIMIT` (so a hang fails the test
# instead of blocking CI), each process inside `sh -c` that prints its exit status, then checks:
#   EXPECT = "W:S ..."  every world rank W ended with status S, before the limit; a rank with
#                       status 4 (a survivor) printed an execution error naming the action it
#                       waited in and the peer it waited for
#   EXPECT = hang       the job was still running at the limit (and no process reported):
#                       what happens without a deadline
set -uo pipefail
limit=$1 expect=$2 mpiexec=$3 flags=$4 np=$5
shift 5
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
# shellcheck disable=SC2086 # FLAGS is a list of words
timeout -k 5 "$limit" "$mpiexec" $flags -np "$np" \
  sh -c '"$0" "$@"; s=$?; echo "[world rank ${OMPI_COMM_WORLD_RANK:-?}] exit status $s"; exit $s' "$@" >"$log" 2>&1
status=$?
elapsed=$((SECONDS - start))
grep -E '^\[world rank' "$log"
fail() {
  echo "FAIL: $1 (mpirun status $status after ${elapsed} s)"
  echo "--- the job's output:"
  cat "$log"
  exit 1
}
if [[ $expect == hang ]]; then
  [[ $status -eq 124 || $status -eq 137 ]] || fail "expected the job to hang until the limit"
  grep -q 'exit status' "$log" && fail "a process ended although nothing should end without a deadline"
  echo "ok: without a deadline the job hangs (killed by timeout after ${elapsed} s)"
  exit 0
fi
[[ $status -eq 124 || $status -eq 137 ]] && fail "the job hung until the ${limit} s limit"
[[ $(grep -c 'exit status' "$log") -eq $np ]] || fail "not every process reported its exit status"
# (mpirun itself exits 0 under orte_abort_on_non_zero_status=0, which lets the survivors
# report: each process's own status, printed by its `sh -c`, is what says how it ended.)
for pair in $expect; do
  w=${pair%%:*} s=${pair##*:}
  grep -qxF "[world rank $w] exit status $s" "$log" || fail "world rank $w did not end with status $s"
  if [[ $s -eq 4 ]]; then
    grep -qE "^\[world rank $w\] execution error: ppsched::execute: rank [0-9]+, (step [0-9]+|after the last action) \([^)]+\): waiting on .*\[peer: world rank [0-9]+ .*\[wait_(timed_out|failed)\]$" "$log" ||
      fail "world rank $w did not report an execution error naming the action and the peer"
  fi
done
echo "ok: every survivor reported its execution error; the job ended in ${elapsed} s (limit ${limit} s)"
