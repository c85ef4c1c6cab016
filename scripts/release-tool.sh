# Sourced by the scripts that draw with the ppsched tool (update-pictures.sh,
# update-report-screenshot.sh): `release_tool ROOT [PATH]` prints PATH, or else the release
# build's tool, configured and built with the release preset when it is missing.
release_tool() {
  local root=$1 tool=${2:-}
  if [[ -z $tool ]]; then
    tool=$root/build/release/tools/ppsched
    if [[ ! -x $tool ]]; then
      (cd "$root" && cmake --preset release >/dev/null &&
        cmake --build --preset release --target ppsched-cli) >&2
    fi
  fi
  printf '%s\n' "$tool"
}
