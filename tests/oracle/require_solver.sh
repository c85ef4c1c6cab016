# Sourced by the oracle tests that need the ILP solver: sets `python` to Debian's interpreter
# (pulp loads there, which may not be the first python3 on PATH) and skips the test (exit 77)
# when python3-pulp or coinor-cbc is missing.
python=/usr/bin/python3
if [[ ! -x $python ]] || ! "$python" -c 'import pulp' 2>/dev/null; then
  echo "SKIP: python3-pulp is not installed (apt-get install python3-pulp)"
  exit 77
fi
if ! command -v cbc >/dev/null; then
  echo "SKIP: coinor-cbc is not installed (apt-get install coinor-cbc)"
  exit 77
fi
