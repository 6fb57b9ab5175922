#!/usr/bin/env bash
# Build the pinned Pulumi CLI from Go modules (through the Go module proxy) and lay out, in one bin folder,
# everything tests/live needs to run trainstack's live commands against the fake Alibaba Cloud of tests/live:
#
#   pulumi                       the CLI, github.com/pulumi/pulumi/pkg/v3/cmd/pulumi at PULUMI_VERSION, built in a
#                                wrapper module (pkg/v3's go.mod has `replace` directives, which only a main
#                                module may apply), with its version set through -ldflags -X
#   pulumi-language-python-exec  the Python SDK's program runner, shipped in the github.com/pulumi/pulumi/sdk/v3
#                                module at the same version
#   pulumi-language-python       the Python language host. Pulumi's own (github.com/pulumi/pulumi/sdk/python/cmd/
#                                pulumi-language-python/v3, an untagged module) is refused by the Go module proxy
#                                this project may use, at every version tried (its tag's commit included), so this
#                                is tests/live/langhost.py: a LanguageRuntime gRPC server of trainstack's own that
#                                runs the program with pulumi-language-python-exec in the stack's venv, as the real
#                                one does (docs/live.md, "Testing the live commands")
#
# and installs tests/live/fake_alicloud.py as plugin `resource alicloud` at the version pulumi_alicloud asks for,
# into $PULUMI_HOME (default: the cache folder's pulumi-home).
#
# Everything is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/trainstack/pulumi-<version>/ (GOPATH and GOCACHE
# too); a second run only checks and rewrites the two small scripts, in seconds. The last line printed is the bin
# folder. PYTHON (default: python3 on PATH) is the interpreter of the language host and of the fake provider: it
# needs the `pulumi` and `grpcio` packages (trainstack's own virtual environment has them).
set -euo pipefail

# The CLI is pinned to the `pulumi` Python SDK that pyproject.toml pins: keep the two in step. 3.260.0 is the newest
# version that PyPI (the SDK) and the Go module proxy (pkg/v3, sdk/v3) both serve here.
PULUMI_VERSION="${PULUMI_VERSION:-3.260.0}"
# pulumi-alicloud's own version is what pulumi_alicloud's pulumi-plugin.json asks for (read from PYTHON below)
GO="${GO:-/usr/local/go/bin/go}"
PYTHON="${PYTHON:-$(command -v python3)}"
HERE="$(cd "$(dirname "$0")" && pwd)"

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/trainstack/pulumi-$PULUMI_VERSION"
BIN="$CACHE/bin"
export GOPATH="$CACHE/gopath" GOCACHE="$CACHE/gocache" GOFLAGS="-modcacherw" GOTOOLCHAIN=local
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"
mkdir -p "$BIN" "$CACHE/src"

log() { echo "install-pulumi: $*" >&2; }

if [ -x "$BIN/pulumi" ] && [ "$("$BIN/pulumi" version 2>/dev/null)" = "v$PULUMI_VERSION" ]; then
  log "pulumi v$PULUMI_VERSION already built in $BIN"
else
  [ -x "$GO" ] || { log "Go not found at $GO (set GO=/path/to/go)"; exit 1; }
  log "building pulumi v$PULUMI_VERSION from Go modules (the first time takes 20+ minutes on 2 cores)"
  SRC="$CACHE/src/cli"
  rm -rf "$SRC" && mkdir -p "$SRC"
  # The wrapper module: pkg/v3's replace of sdk/v3 (=> ../sdk) becomes a requirement of the same version, its
  # other replace is copied as it is.
  cat > "$SRC/go.mod" <<GOMOD
module trainstack.invalid/pulumi-cli

go 1.26.6

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e

require (
	github.com/pulumi/pulumi/pkg/v3 v$PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 v$PULUMI_VERSION
)
GOMOD
  (cd "$SRC" && "$GO" get -tool "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$PULUMI_VERSION" \
     && "$GO" get "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION" && "$GO" mod tidy)
  # the go.mod must still hold the exact versions (a newer sdk/v3 pulled in by a dependency would be a mismatch)
  grep -Eq "github.com/pulumi/pulumi/sdk/v3 v$PULUMI_VERSION( |\$)" "$SRC/go.mod" \
    || { log "the wrapper module did not keep sdk/v3 at v$PULUMI_VERSION:"; cat "$SRC/go.mod" >&2; exit 1; }
  (cd "$SRC" && "$GO" build -trimpath -o "$BIN/pulumi.tmp" \
     -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
     github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  mv "$BIN/pulumi.tmp" "$BIN/pulumi"
  got="$("$BIN/pulumi" version)"
  [ "$got" = "v$PULUMI_VERSION" ] || { log "built pulumi says $got, not v$PULUMI_VERSION"; exit 1; }
  log "built $got"
fi

# pulumi-language-python-exec from the sdk/v3 module
if [ ! -f "$BIN/pulumi-language-python-exec" ]; then
  SDK_DIR="$(cd "$CACHE/src/cli" 2>/dev/null && "$GO" mod download -json "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION" \
    | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  install -m 0755 "$SDK_DIR/python/cmd/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
fi

# The language host and the fake provider: small wrappers that run the scripts of this checkout with PYTHON,
# rewritten on every run (a new checkout, another PYTHON).
write_wrapper() {  # SCRIPT DEST
  printf '#!/bin/sh\n# written by tests/live/install-pulumi.sh\nexec "%s" "%s" "$@"\n' "$PYTHON" "$1" > "$2.tmp"
  chmod 0755 "$2.tmp" && mv "$2.tmp" "$2"
}
"$PYTHON" -c 'import grpc, pulumi.runtime.proto' 2>/dev/null \
  || { log "$PYTHON lacks the pulumi or grpcio package (set PYTHON to trainstack's venv python)"; exit 1; }
write_wrapper "$HERE/langhost.py" "$BIN/pulumi-language-python"

ALICLOUD_VERSION="$("$PYTHON" - <<'PY'
import json
from importlib import resources
print(json.loads(resources.files("pulumi_alicloud").joinpath("pulumi-plugin.json").read_text())["version"])
PY
)"
PULUMI_HOME="${PULUMI_HOME:-$CACHE/pulumi-home}"
PLUGIN_DIR="$PULUMI_HOME/plugins/resource-alicloud-v$ALICLOUD_VERSION"
mkdir -p "$PLUGIN_DIR"
write_wrapper "$HERE/fake_alicloud.py" "$PLUGIN_DIR/pulumi-resource-alicloud"
rm -f "$PULUMI_HOME/plugins/resource-alicloud-v$ALICLOUD_VERSION.partial"
log "fake alicloud provider installed as plugin resource alicloud v$ALICLOUD_VERSION in $PULUMI_HOME"
echo "$BIN"
