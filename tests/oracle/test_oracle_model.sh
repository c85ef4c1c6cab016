#!/usr/bin/env bash
# The ILP oracle's model is ppsched's simulator's: on ~20 small random problems, the ILP's optimal
# order replays under `ppsched simulate --csv` to the ILP's makespan and memory, built-in orders
# replay under the oracle to ppsched's numbers, and the optimum is never worse than a built-in
# that fits (see check_model.py). Skips (exit 77) when python3-pulp or coinor-cbc is missing.
# usage: test_oracle_model.sh PPSCHED
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_oracle_model.sh PPSCHED}
python=/usr/bin/python3 # Debian's modules (pulp) load in the system interpreter
if [[ ! -x $python ]] || ! "$python" -c 'import pulp' 2>/dev/null; then
  echo "SKIP: python3-pulp is not installed (apt-get install python3-pulp)"
  exit 77
fi
if ! command -v cbc >/dev/null; then
  echo "SKIP: coinor-cbc is not installed (apt-get install coinor-cbc)"
  exit 77
fi
exec "$python" "$here/check_model.py" "$ppsched" --count 20
