# Source on the GPU machine: carried wheels into /tmp/site, the repository on the path.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 || echo "wheel install failed"
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
