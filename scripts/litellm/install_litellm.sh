#!/usr/bin/env bash
# Install LiteLLM's proxy (litellm[proxy] 1.108.7) into a venv OUTSIDE the checkout, for the gateway tests
# (tests/test_litellm_real.py) and the field test (scripts/litellm/field_test.py). Prints the venv's path on
# its last line.
#
# The venv is kept between runs: a marker written only after a complete install and an import check makes
# a second run a no-op. 1.108.7 is the newest release whose companion packages PyPI has (1.108.8 to 1.110.x
# pin versions PyPI does not serve). Run the proxy with LITELLM_LOCAL_MODEL_COST_MAP=True (no download of
# the model cost map) and LITELLM_TELEMETRY_DISABLED=true; the tests bind it to 127.0.0.1 only.
set -euo pipefail

VERSION=1.108.7
CACHE="${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}"
DEST="$CACHE/litellm-$VERSION"
MARKER="$DEST/.kvwatch-complete"
PY="${KVWATCH_REAL_PYTHON:-python3}"

if [[ -f "$MARKER" ]]; then
    echo "litellm $VERSION already installed" >&2
    echo "$DEST"
    exit 0
fi

mkdir -p "$CACHE"
rm -rf "$DEST"
start=$SECONDS
"$PY" -m venv "$DEST"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$DEST/bin/pip" install -q "litellm[proxy]==$VERSION" >&2
LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY_DISABLED=true \
    "$DEST/bin/python" -c "import litellm.proxy.proxy_server" >&2
touch "$MARKER"
echo "litellm $VERSION installed in $((SECONDS - start)) s" >&2
echo "$DEST"
