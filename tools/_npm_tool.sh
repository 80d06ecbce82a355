# Sourced by the tools/install_*.sh scripts that install a pinned npm CLI into .tools/
# (git-ignored):
#   source "$(dirname "${BASH_SOURCE[0]}")/_npm_tool.sh"
#   npm_tool_options "$@"   # --help prints the caller's header comment; other options are refused
#   install_npm_tool NAME PACKAGE SPEC PREFIX BIN [VERSION_ARG ...]
#     NAME        what the messages call the tool, e.g. "MCP Inspector"
#     PACKAGE     the npm package; its exact version is read from SPEC/package.json's dependencies
#     SPEC        folder (relative to the repository) holding package.json and package-lock.json
#     PREFIX      install folder (relative to the repository), e.g. .tools/inspector
#     BIN         the CLI, PREFIX/node_modules/.bin/BIN
#     VERSION_ARG the arguments for which BIN prints exactly the package's version on stdout
# install_npm_tool runs `npm ci` into PREFIX (exactly the lock file's tree, no install scripts)
# and checks the CLI's version. It is idempotent: when PREFIX's stamp matches SPEC's two files
# and the CLI answers with the version, nothing is done. Returns non-zero (with a message on
# stderr) on failure; a calling script that ends with it exits with its status.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

npm_tool_options() {
  case "${1:-}" in
    "") ;;
    -h | --help)
      # The caller's header: the comment lines after its shebang, without their "# ".
      sed -n '2,${/^#/!q;p}' "${BASH_SOURCE[1]}" | sed 's/^# \{0,1\}//'
      exit 0 ;;
    *) echo "unknown option: $1 (use --help)" >&2; exit 2 ;;
  esac
}

# _npm_tool_works VERSION CLI [ARG ...]: CLI, run with the ARGs, prints exactly VERSION on stdout.
_npm_tool_works() {
  local version="$1"
  shift
  [ -x "$1" ] && [ "$("$@" 2>/dev/null)" = "$version" ]
}

install_npm_tool() {
  if [ $# -lt 5 ]; then
    echo "usage: install_npm_tool NAME PACKAGE SPEC PREFIX BIN [VERSION_ARG ...]" >&2
    return 2
  fi
  local name="$1" package="$2" spec_rel="$3" label="$4" bin="$5"
  local spec_dir="$ROOT/$3" prefix="$ROOT/$4"
  shift 5
  local cli="$prefix/node_modules/.bin/$bin" version_args=("$@")
  local tool version stamp spec start

  for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
      echo "$label: '$tool' not found: install Node.js (with npm) first" >&2
      return 1
    fi
  done
  if ! version="$(node -p 'require(process.argv[1]).dependencies[process.argv[2]] || ""' \
    "$spec_dir/package.json" "$package")" || [ -z "$version" ]; then
    echo "$label: $spec_rel/package.json does not pin $package" >&2
    return 1
  fi

  stamp="$prefix/.installed"
  spec="$(cat "$spec_dir/package.json" "$spec_dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] &&
    _npm_tool_works "$version" "$cli" "${version_args[@]}"; then
    echo "$label: $name $version already installed ($(du -sh "$prefix" | cut -f1))"
    return 0
  fi

  start=$(date +%s)
  echo "$label: installing $package@$version (node $(node --version)) ..."
  rm -rf "$prefix"
  mkdir -p "$prefix"
  cp "$spec_dir/package.json" "$spec_dir/package-lock.json" "$prefix/"
  # npm ci installs exactly the lock file's tree. Install scripts are not run (each calling
  # script says why its tool needs none); --loglevel=error hides EBADENGINE warnings.
  if ! (cd "$prefix" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
    echo "$label: npm ci failed (is the npm registry reachable? 'npm config get registry')" >&2
    return 1
  fi
  if ! _npm_tool_works "$version" "$cli" "${version_args[@]}"; then
    "$cli" "${version_args[@]}" >&2 || true
    echo "$label: installed, but '$cli ${version_args[*]}' does not print $version" >&2
    return 1
  fi
  echo "$spec" >"$stamp"
  echo "$label: $name $version installed in $(($(date +%s) - start)) s" \
    "($(du -sh "$prefix" | cut -f1))"
}
