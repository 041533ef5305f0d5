#!/usr/bin/env bash
# run.sh WEBDIR FLASHSTEP [check_page.py options]: serve WEBDIR on a free loopback port and run
# the page's checks in headless Chromium against the native program FLASHSTEP (make test-web):
# check_page.py (the page without a GPU), check_layout.py (phone, tablet and laptop sizes),
# check_gpu.py (the GPU panel on SwiftShader) and check_offline.py (the service worker: offline,
# then updated; it serves copies of WEBDIR itself).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
web=$1 bin=$2
shift 2
[ -f "$web/index.html" ] || { echo "test-web: no $web/index.html (make web)"; exit 2; }
log=$(mktemp)
python3 -u "$here/serve.py" "$web" 0 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$log"' EXIT
url=
for _ in $(seq 100); do
  url=$(sed -n 's/.* at \(http:[^ ]*\) .*/\1/p' "$log")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$log"; echo "test-web: the server did not start"; exit 2; }
# Two browsers run side by side (each mostly waits on its page): check_page.py alone, and beside
# it check_gpu.py (the GPU panel, with WebGPU on SwiftShader, Chromium's CPU Vulkan: every WGSL
# kernel), then check_offline.py (about 20 s), then check_layout.py (about 25 s), which together
# take about as long. A third browser at once starved check_page.py's large paste past its 30 s
# on 2 cores. Reports are printed one after the other.
gpu_log=$(mktemp)
trap 'kill $server 2>/dev/null; rm -f "$log" "$gpu_log"' EXIT
( rc=0
  python3 "$here/check_gpu.py" "$url" "$bin" || rc=1
  echo "check_offline.py: the page offline and updated (a service worker)"
  python3 "$here/check_offline.py" "$web" || rc=1
  echo "check_layout.py: the page at phone, tablet and laptop sizes"
  python3 "$here/check_layout.py" "$url" || rc=1
  exit $rc ) >"$gpu_log" 2>&1 &
gpu=$!
rc=0
python3 "$here/check_page.py" "$url" "$bin" "$@" || rc=1
wait $gpu || rc=1
cat "$gpu_log"
exit $rc
