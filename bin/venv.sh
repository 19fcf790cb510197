# Sourced by bin/setup, bin/preview and bin/pulumi: one way to make a Python environment.
# venv DIR PIP-ARGS...: create DIR once, install PIP-ARGS when its inputs changed (a stamp in
# DIR/.installed holds the hash of the arguments, the requirements files and pyproject.toml).
venv() {
  local dir=$1; shift
  local want; want="$(printf '%s\n' "$@" "${VENV_SOURCE:-}" | cat - requirements*.txt pyproject.toml policy/requirements.txt | sha256sum)"
  if [ "$(cat "$dir/.installed" 2>/dev/null)" = "$want" ]; then return; fi
  echo "setup: $dir (pip install $*; a first install takes a minute or two)" >&2
  [ -x "$dir/bin/python" ] || python3 -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip
  "$dir/bin/python" -m pip install --quiet "$@"
  echo "$want" > "$dir/.installed"
}
