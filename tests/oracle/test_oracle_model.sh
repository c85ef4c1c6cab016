#!/usr/bin/env bash
# The ILP oracle's model is ppsched's simulator's: on ~20 small random problems, the ILP's optimal
# order replays under `ppsched simulate --csv` to the ILP's makespan and memory, built-in orders
# replay under the oracle to ppsched's numbers, and the optimum is never worse than a built-in
# that fits (see check_model.py). Skips (exit 77) when python3-pulp or coinor-cbc is missing.
# usage: test_oracle_model.sh PPSCHED
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_oracle_model.sh PPSCHED}
# shellcheck source=require_solver.sh
source "$here/require_solver.sh" || exit 1 # python; exit 77 without pulp or cbc
exec "$python" "$here/check_model.py" "$ppsched" --count 20
