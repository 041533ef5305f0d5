#!/usr/bin/env bash
# pack.sh: what run-device.sh carries to a GPU machine that has no Node and no network:
# .wgpu/pack.tar.xz with this machine's node binary (it must need only glibc: the Node of
# Debian's nodejs package does) and the files of bench/webgpu/node_modules that run on
# linux-x64; and .gl/ with the Vulkan and GL loader packages. Both are ignored by git (the
# device tool's `carry` takes them).
# ORT=0 leaves out ONNX Runtime Web (its WebAssembly is 27 MB: a call that runs only bench.js,
# run-device.sh with ORT=0, then fits the device tool's transfer limit with the tree). XZ holds xz's
# options: XZ=-9e packs tighter (a minute and a half; with ONNX Runtime Web 32.5 MB against 39 at the
# default -1, 30.1 with the binaries stripped), XZ="--x86 --lzma2=preset=9e" tighter still (x86
# code filtered first: 28.8 MB; tar's -J undoes it on the other side).
set -euo pipefail
cd "$(dirname "$0")/../.."
nm=bench/webgpu/node_modules
[ -f "$nm/webgpu/dist/linux-x64/dawn.node" ] || { echo "pack.sh: run npm ci --prefix bench/webgpu first" >&2; exit 2; }
grep -qx '/.wgpu/' .git/info/exclude 2>/dev/null || echo /.wgpu/ >> .git/info/exclude
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >> .git/info/exclude
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cp "$(command -v node)" "$t/node"
mkdir -p "$t/node_modules/webgpu/dist/linux-x64" "$t/node_modules/onnxruntime-web/dist"
cp "$nm/webgpu/index.js" "$nm/webgpu/package.json" "$t/node_modules/webgpu/"
cp "$nm/webgpu/dist/linux-x64/dawn.node" "$t/node_modules/webgpu/dist/linux-x64/"
# their symbols and debug information are not needed to run them (Debian's node: 99 MB, 86
# stripped; dawn.node 21.5 MB, 17.5): what is left of the 64 MiB goes to the tree
if command -v strip > /dev/null; then strip "$t/node" && strip --strip-unneeded "$t/node_modules/webgpu/dist/linux-x64/dawn.node"; fi
if [ "${ORT:-1}" != 0 ]; then
  cp "$nm/onnxruntime-web/package.json" "$t/node_modules/onnxruntime-web/"
  cp "$nm"/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs "$nm"/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.* "$t/node_modules/onnxruntime-web/dist/"
fi
mkdir -p .wgpu
tar -cf - -C "$t" . | xz ${XZ:--1} -T2 > .wgpu/pack.tar.xz
if [ ! -d .gl ] || ! ls .gl/*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .wgpu/pack.tar.xz .gl
