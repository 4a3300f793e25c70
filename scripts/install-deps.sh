#!/bin/sh
# install-deps.sh: installs the Debian packages arkgen needs, when some are missing.
# Used by `make run`, `make test` and .ci/run. Does nothing when everything is there.
set -eu
# python3-numpy: tests/gguf.sh needs numpy (the dequantisation checks) and skips as a whole without it.
PKGS="gcc make libconfig-dev libmetis-dev libcmocka-dev libcjson-dev clang perl python3-numpy"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
	echo "install-deps: error: need root (or sudo) to install:$missing" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing
