# Sourced by the stages that need the ecosystem's real tools (tests/crossplane/run,
# tests/e2e/cluster/*): builds a pinned release of a Go program once, into
#   ${FI_TOOLS_DIR:-$FI_CACHE/tools}/NAME-VERSION/
# with the Go module and build caches kept under $FI_CACHE/go, so that a second
# run, or a second checkout, only links (FI_CACHE defaults to
# ~/.cache/function-inference). Needs `go` and, the first time, the Go module
# proxy; no Docker, no images.
#
# The proxy here refuses version lists, so `go install PKG@VERSION` (which asks
# for one) fails: each tool is built inside a copy of its own module at that
# version, with the dependency versions and checksums its release was built with.

FI_CACHE=${FI_CACHE:-$HOME/.cache/function-inference}
TOOLS_DIR=${FI_TOOLS_DIR:-$FI_CACHE/tools}
export GOMODCACHE=${GOMODCACHE_OVERRIDE:-$FI_CACHE/go/mod}
export GOCACHE=${GOCACHE_OVERRIDE:-$FI_CACHE/go/build}

# tool_dir NAME VERSION: where NAME-VERSION lives.
tool_dir() { echo "$TOOLS_DIR/$1-$2"; }

# tool_ready NAME VERSION: whether it was built completely.
tool_ready() { [[ -f $(tool_dir "$1" "$2")/.complete ]]; }

require_go() {
  command -v go >/dev/null && return 0
  echo "cannot build $1: no 'go' on PATH. Install Go 1.26 or later (https://go.dev/dl/, or 'devbox shell')." >&2
  return 1
}

# module_source MODULE VERSION DEST: a writable copy of MODULE@VERSION in DEST.
module_source() {
  local module=$1 version=$2 dest=$3 src work
  work=$(mktemp -d "${TMPDIR:-/tmp}/go-mod.XXXXXX")
  (cd "$work" && go mod init function-inference.local/tools >/dev/null 2>&1)
  src=$(cd "$work" && go mod download -json "$module@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$work"
  [[ -n $src ]] || { echo "cannot download $module@$version" >&2; return 1; }
  rm -rf "$dest"
  cp -R "$src" "$dest"
  chmod -R u+w "$dest"
}

# go_tool NAME VERSION MODULE PACKAGE LDFLAGS [GO_VERSION] [PREPARE]: builds
# PACKAGE of MODULE at VERSION into tool_dir/NAME unless it is there already.
# GO_VERSION pins the Go toolchain (fetched by `go` itself from the module
# proxy) for a release that does not build with newer ones. PREPARE, a shell
# function, runs in the module's copy before the build (to add a replace, or
# to keep files from the source in $dir); the copy is removed afterwards.
# The build's output goes to a log, printed only when it fails.
go_tool() {
  local name=$1 version=$2 module=$3 package=$4 ldflags=$5 go_version=${6:-} prepare=${7:-}
  local dir log
  dir=$(tool_dir "$name" "$version")
  tool_ready "$name" "$version" && return 0
  require_go "$name" || return 1
  echo "== building $name $version into $dir (once; minutes)"
  mkdir -p "$dir"
  log=$(mktemp "${TMPDIR:-/tmp}/go-$name.XXXXXX")
  if ! (
    set -euo pipefail
    if [[ -n $go_version ]]; then export GOTOOLCHAIN=$go_version; fi
    src=$dir/.src
    module_source "$module" "$version" "$src"
    cd "$src"
    if [[ -n $prepare ]]; then "$prepare"; fi
    go version
    # GO_TOOL_MOD=mod for a module whose go.sum a PREPARE made stale.
    go build ${GO_TOOL_MOD:+-mod=$GO_TOOL_MOD} -trimpath -ldflags "$ldflags" -o "$dir/$name.partial" "./${package#"$module"}"
  ) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$dir/$name.partial" "$log"
    echo "cannot build $name $version ($package@$version): see the go output above" >&2
    return 1
  fi
  rm -rf "$log" "$dir/.src"
  mv "$dir/$name.partial" "$dir/$name"
  touch "$dir/.complete"
  trim_go_build_cache_when_disk_is_short
}

# The build cache only saves time when another tool or version is built
# later (each built tool is kept whole), and the Kubernetes tools fill it
# with about 9 GB: when less than FI_MIN_FREE_GIB (10) remains on its disk,
# it is emptied so that the next build has room.
trim_go_build_cache_when_disk_is_short() {
  local free_kib
  mkdir -p "$GOCACHE"
  free_kib=$(df -Pk "$GOCACHE" | awk 'NR == 2 {print $4}')
  if [[ -n $free_kib ]] && ((free_kib < ${FI_MIN_FREE_GIB:-10} * 1024 * 1024)); then
    echo "== $((free_kib / 1024 / 1024)) GiB free: emptying the Go build cache ($GOCACHE)"
    go clean -cache
  fi
}

# The tools every stage shares.
CRANK_VERSION=v2.2.0
CRANK_MODULE=github.com/crossplane/crossplane/v2
CHAINSAW_VERSION=v0.2.14
CHAINSAW_MODULE=github.com/kyverno/chainsaw
CRANK=$(tool_dir crank "$CRANK_VERSION")/crank
CROSSPLANE_CRDS=$(tool_dir crank "$CRANK_VERSION")/cluster/crds
CHAINSAW=$(tool_dir chainsaw "$CHAINSAW_VERSION")/chainsaw

# Crossplane's module's cluster/ folder (its CRDs, its Helm chart) is kept
# beside crank: `crank beta validate` checks Crossplane's kinds against those
# CRDs instead of pulling an image, and the e2e stage renders the chart.
keep_crossplane_cluster_folder() { rm -rf "$dir/cluster" && cp -R cluster "$dir/cluster"; }

# install_crank_and_chainsaw: Crossplane's CLI (the `crossplane` command) and chainsaw.
install_crank_and_chainsaw() {
  go_tool crank "$CRANK_VERSION" "$CRANK_MODULE" "$CRANK_MODULE/cmd/crank" \
    "-X $CRANK_MODULE/internal/version.version=$CRANK_VERSION" "" keep_crossplane_cluster_folder || return 1
  # chainsaw v0.2.14 does not build with Go 1.25 or later (its test runner
  # implements testing's internal testDeps, which gained a method): Go 1.24.2,
  # the version its go.mod names.
  go_tool chainsaw "$CHAINSAW_VERSION" "$CHAINSAW_MODULE" "$CHAINSAW_MODULE" \
    "-X $CHAINSAW_MODULE/pkg/version.BuildVersion=$CHAINSAW_VERSION" go1.24.2
}
