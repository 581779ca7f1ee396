#!/usr/bin/env bash
# Install LMCache 0.5.6 (and torch 2.13.0's CPU build) into a venv outside the checkout; print its path.
#
#   scripts/real/install_lmcache.sh          # venv: ${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}/lmcache-0.5.6
#
# Only LMCache's own cache engine runs here (tests/real/lmcache_driver.py: MockGPUConnector and the
# local_cpu backend): every KV connector of LMCache needs CUDA (`torch.cuda.Stream requires CUDA
# support`). Cached like install_sglang.sh: a marker holding a hash of this script and the requirements.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KVWATCH_REAL_CACHE:-$HOME/.cache/kvwatch-real}
venv=$cache/lmcache-0.5.6
marker=$venv/.kvwatch-installed
requirements=$here/lmcache-requirements.txt
stamp=$(cat "${BASH_SOURCE[0]}" "$requirements" | sha256sum | cut -c1-16)

if [[ -f $marker && $(cat "$marker") == "$stamp" ]]; then
    echo "$venv"
    exit 0
fi

python=${PYTHON:-python3}
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [[ $version != 3.11 ]]; then
    echo "install_lmcache.sh: needs Python 3.11 (torch 2.13.0's CPU wheel), $python is $version: set PYTHON" >&2
    exit 1
fi

rm -rf "$venv"
mkdir -p "$cache"
"$python" -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps)
# torch alone first (the machine's CPU wheel; `--no-deps` everywhere, or pip may fetch a CUDA build).
if ! "${pip[@]}" torch==2.13.0; then
    echo "install_lmcache.sh: torch==2.13.0 (CPU) not found. Point pip at PyTorch's CPU wheels:" >&2
    echo "    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu $0" >&2
    exit 1
fi
"${pip[@]}" -r "$requirements"
"${pip[@]}" lmcache==0.5.6
# LMCache falls back to a CPU stub device without CUDA; the cache engine must import and build.
LMCACHE_TRACK_USAGE=false "$venv/bin/python" -c 'import lmcache.v1.cache_engine, lmcache.v1.gpu_connector.mock_gpu_connector' \
    || { echo "install_lmcache.sh: lmcache 0.5.6 installed but its cache engine does not import" >&2; exit 1; }

echo "$stamp" > "$marker"
echo "$venv"
