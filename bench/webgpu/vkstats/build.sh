#!/usr/bin/env bash
# build.sh: the Vulkan layer fs_vkstats.c into DIR (default .wgpu/vkstats, which the device
# tool's carry takes with the rest of .wgpu), beside its manifest. Needs gcc and the Vulkan
# headers (Debian's libvulkan-dev); the layer itself needs only libc, so one built here runs on the
# lent machine. Use: VK_LAYER_PATH=DIR VK_INSTANCE_LAYERS=VK_LAYER_FS_stats FS_VKSTATS=LOG node ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../../.wgpu/vkstats}
[ -f /usr/include/vulkan/vk_layer.h ] || { echo "build.sh: the Vulkan headers are missing (apt-get install libvulkan-dev)" >&2; exit 2; }
mkdir -p "$out"
gcc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -D_POSIX_C_SOURCE=200809L \
  -o "$out/libVkLayer_fs_stats.so" "$here/fs_vkstats.c" -lpthread
cp "$here/VkLayer_fs_stats.json" "$out/"
echo "build.sh: $out/libVkLayer_fs_stats.so"
