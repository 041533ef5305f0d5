#!/usr/bin/env bash
# run.sh WEBDIR FLASHSTEP [check_page.py options]: serve WEBDIR on a free loopback port and run
# the page's checks in headless Chromium against the native program FLASHSTEP (make test-web):
# check_page.py (the page without a GPU), check_layout.py (phone, tablet and laptop sizes),
# check_gpu.py (the GPU panel on SwiftShader), check_offline.py (the service worker: offline,
# then updated; it serves copies of WEBDIR itself), check_a11y.py (WCAG 2.1 AA: axe-core, which
# scripts/web-axe.sh installs outside the tree, the accessibility tree, the keyboard alone,
# reduced motion, zoom and a narrow screen) and check_quiz.py (the questions, on by default, and
# a section's quiz, its score kept across a reload). All but check_quiz.py see the page with the
# questions off (cdp.py), as a teacher projecting it does.
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
# Two browsers run side by side (each mostly waits on its page): check_gpu.py alone (the GPU
# panel, with WebGPU on SwiftShader, Chromium's CPU Vulkan: every WGSL kernel; 190 s, most of it
# compiling pipelines one at a time), and beside it check_page.py (97 s), then check_offline.py
# (32 s), then check_layout.py (11 s), which together take less (2026-11-27, load average 2-2.7).
# (check_offline.py and check_layout.py ran after check_gpu.py until 2026-11-27; with that and
# check_gpu.py's own cut, run.sh went from 237 to 190 s on this 2-core machine.) A third browser
# at once starved check_page.py's large paste past its 30 s on 2 cores. Reports are printed one
# after the other, check_gpu.py's last.
# Each script's seconds are printed after its report (a reader of the CI log sees the tail).
timed() {   # timed NAME COMMAND...: run it, then say how long it took
  local t0=$SECONDS rc=0
  "${@:2}" || rc=1
  echo "($1: $((SECONDS - t0)) s)"
  return $rc
}
gpu_log=$(mktemp)
trap 'kill $server 2>/dev/null; rm -f "$log" "$gpu_log"' EXIT
timed check_gpu.py python3 "$here/check_gpu.py" "$url" "$bin" >"$gpu_log" 2>&1 &
gpu=$!
rc=0
timed check_page.py python3 "$here/check_page.py" "$url" "$bin" "$@" || rc=1
echo "check_offline.py: the page offline and updated (a service worker)"
timed check_offline.py python3 "$here/check_offline.py" "$web" || rc=1
echo "check_layout.py: the page at phone, tablet and laptop sizes"
timed check_layout.py python3 "$here/check_layout.py" "$url" || rc=1
echo "check_a11y.py: the page for every student (WCAG 2.1 AA)"
if axe=$(bash "$here/../../scripts/web-axe.sh"); then
  timed check_a11y.py python3 "$here/check_a11y.py" "$url" "$bin" "$axe" || rc=1
else
  echo "check_a11y.py: FAIL: no axe-core (scripts/web-axe.sh)"; rc=1; axe=
fi
echo "check_quiz.py: the lessons' questions and the sections' quizzes"
timed check_quiz.py python3 "$here/check_quiz.py" "$url" "$bin" ${axe:+"$axe"} || rc=1
wait $gpu || rc=1
cat "$gpu_log"
exit $rc
