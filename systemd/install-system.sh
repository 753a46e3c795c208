#!/bin/sh
# Install policyd where systemd/system/policyd.service's ExecStart expects it:
# a virtual environment in /opt/policyd, and /usr/local/bin/policyd -> /opt/policyd/bin/policyd;
# the man page (docs/policyd.1) and bash completion under /usr/local/share.
#
#   sudo systemd/install-system.sh            # from the source tree
#
# (Not `sudo pip install --prefix /usr/local .`: Debian's pip installs that to
# /usr/local/local/bin, and a system-wide pip install is refused under PEP 668 anyway.)
# DESTDIR stages everything under another root (packaging, tests); PIP_ARGS adds pip options.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
VENV=/opt/policyd
BIN=/usr/local/bin
MAN1=/usr/local/share/man/man1
BASH_COMPLETION=/usr/local/share/bash-completion/completions
DESTDIR=${DESTDIR:-}
PYTHON=${PYTHON:-python3}

"$PYTHON" -m venv "$DESTDIR$VENV"
# shellcheck disable=SC2086 # PIP_ARGS is a list of options
"$DESTDIR$VENV/bin/python" -m pip install --quiet --disable-pip-version-check ${PIP_ARGS:-} "$SRC"
if [ -n "$DESTDIR" ]; then
  # the venv's scripts name their interpreter by the staged path: make them name the final one
  # (/opt/policyd/bin/python), as a package installed from the staging root will find it
  grep -rlI --null -F "$DESTDIR$VENV" "$DESTDIR$VENV/bin" | xargs -0 -r sed -i "s|$DESTDIR$VENV|$VENV|g"
fi
mkdir -p "$DESTDIR$BIN" "$DESTDIR$MAN1" "$DESTDIR$BASH_COMPLETION"
ln -sfn "$VENV/bin/policyd" "$DESTDIR$BIN/policyd"
cp "$SRC/docs/policyd.1" "$DESTDIR$MAN1/policyd.1"
"$DESTDIR$VENV/bin/python" -m policyd completion bash > "$DESTDIR$BASH_COMPLETION/policyd"
echo "policyd installed in $DESTDIR$VENV; $DESTDIR$BIN/policyd -> $VENV/bin/policyd"
