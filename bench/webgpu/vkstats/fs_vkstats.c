/* fs_vkstats.c: a Vulkan layer that asks the driver what it made of every compute pipeline.
 *
 * WebGPU hides the compiled kernel: Dawn turns our WGSL into SPIR-V, the driver turns that into
 * machine code, and neither says how many registers an invocation holds, whether anything spilled
 * to memory, or how much workgroup memory the kernel really takes. Vulkan can say it, through
 * VK_KHR_pipeline_executable_properties, but only to the program that made the device. This layer
 * sits between Dawn and the driver (the loader puts it there when VK_INSTANCE_LAYERS names it):
 *
 *   vkCreateDevice            adds that extension and its feature where the GPU offers them
 *   vkCreateShaderModule      remembers each module's SPIR-V by a hash (and, with
 *                             FS_VKSTATS_SPIRV=DIR, writes it to DIR/HASH.spv)
 *   vkCreateComputePipelines  asks for the statistics, then writes one line a pipeline to the
 *                             file FS_VKSTATS names (appended; stderr if unset):
 *       vkstats pipeline SEQ module HASH spirv BYTES wg N: exe "NAME" subgroup N | Stat=value; ...
 *                             (wg: the invocations of a workgroup, read from the SPIR-V)
 *                             and, with FS_VKSTATS_IR=DIR, the driver's internal representations
 *                             of the code too, where it gives any (DIR/SEQ-EXE-K.txt, or .bin;
 *                             the line says how many: "ir N")
 *
 * Nothing else changes: every other call goes straight to the next layer or the driver. Where
 * the GPU does not offer the extension the line says so, and the device is made as asked.
 * bench.js writes its own lines into the same file around each pipeline it makes (--vkstats), so
 * that every record names the kernel it belongs to. Build: `bench/webgpu/vkstats/build.sh`;
 * docs/webgpu.md, "What the driver made of a kernel", says how a device call uses it.
 */
#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXH 64          /* instances or devices alive at once */
#define MAXMOD 4096      /* shader modules remembered */

/* the loader's dispatch table pointer: the same for an instance and its physical devices, and
 * for a device and its queues and command buffers */
static void *key_of(const void *handle) { return *(void *const *)handle; }

typedef struct {
  void *key;
  VkInstance instance;
  PFN_vkGetInstanceProcAddr gipa;
  PFN_vkEnumerateDeviceExtensionProperties enum_ext;
} Inst;

typedef struct {
  void *key;
  VkDevice device;
  int stats;             /* the extension and its feature are on */
  PFN_vkGetDeviceProcAddr gdpa;
  PFN_vkDestroyDevice destroy;
  PFN_vkCreateShaderModule create_module;
  PFN_vkCreateComputePipelines create_compute;
  PFN_vkGetPipelineExecutablePropertiesKHR exe_props;
  PFN_vkGetPipelineExecutableStatisticsKHR exe_stats;
  PFN_vkGetPipelineExecutableInternalRepresentationsKHR exe_ir;
} Dev;

typedef struct { VkShaderModule module; uint64_t hash; size_t bytes; unsigned wg; } Mod;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Inst insts[MAXH];
static Dev devs[MAXH];
static Mod mods[MAXMOD];
static size_t n_mods, next_mod;   /* a ring: the oldest forgotten first */
static unsigned long seq;

static Inst *inst_of(void *key) {
  for (int k = 0; k < MAXH; k++) if (insts[k].key == key) return &insts[k];
  return NULL;
}

static Dev *dev_of(void *key) {
  for (int k = 0; k < MAXH; k++) if (devs[k].key == key) return &devs[k];
  return NULL;
}

static FILE *out_open(void) {
  const char *path = getenv("FS_VKSTATS");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  return f ? f : stderr;
}

static void out_close(FILE *f) {
  if (f != stderr) fclose(f); else fflush(f);
}

/* FNV-1a over the SPIR-V words */
static uint64_t fnv(const uint32_t *w, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *b = (const unsigned char *)w;
  for (size_t i = 0; i < bytes; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

/* A module's workgroup size, x · y · z of its first OpExecutionMode LocalSize (0 where it has none,
 * or gives it by constants: LocalSizeId). SPIR-V: a 5-word header, then instructions whose first
 * word is (word count << 16) | opcode; OpExecutionMode is 16, LocalSize mode 17. */
static unsigned local_size(const uint32_t *w, size_t bytes) {
  size_t n = bytes / 4;
  if (n < 5 || w[0] != 0x07230203u) return 0;
  for (size_t i = 5; i < n;) {
    uint32_t wc = w[i] >> 16, op = w[i] & 0xffffu;
    if (!wc || i + wc > n) return 0;
    if (op == 16 && wc >= 6 && w[i + 2] == 17) return w[i + 3] * w[i + 4] * w[i + 5];
    i += wc;
  }
  return 0;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fs_GetInstanceProcAddr(VkInstance instance, const char *name);
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fs_GetDeviceProcAddr(VkDevice device, const char *name);

static VKAPI_ATTR VkResult VKAPI_CALL fs_CreateInstance(const VkInstanceCreateInfo *ci, const VkAllocationCallbacks *alloc,
                                                        VkInstance *out) {
  VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)ci->pNext;
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = (VkLayerInstanceCreateInfo *)link->pNext;
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
  VkResult r = create(ci, alloc, out);
  if (r != VK_SUCCESS) return r;
  pthread_mutex_lock(&lock);
  Inst *s = inst_of(NULL);
  if (s) {
    s->key = key_of(*out);
    s->instance = *out;
    s->gipa = gipa;
    s->enum_ext = (PFN_vkEnumerateDeviceExtensionProperties)gipa(*out, "vkEnumerateDeviceExtensionProperties");
  }
  pthread_mutex_unlock(&lock);
  return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fs_DestroyInstance(VkInstance instance, const VkAllocationCallbacks *alloc) {
  pthread_mutex_lock(&lock);
  Inst *s = inst_of(key_of(instance));
  PFN_vkDestroyInstance destroy = s ? (PFN_vkDestroyInstance)s->gipa(instance, "vkDestroyInstance") : NULL;
  if (s) memset(s, 0, sizeof *s);
  pthread_mutex_unlock(&lock);
  if (destroy) destroy(instance, alloc);
}

static int offers(Inst *s, VkPhysicalDevice pd, const char *ext) {
  uint32_t n = 0;
  if (!s->enum_ext || s->enum_ext(pd, NULL, &n, NULL) != VK_SUCCESS || !n) return 0;
  VkExtensionProperties *e = calloc(n, sizeof *e);
  int found = 0;
  if (e && s->enum_ext(pd, NULL, &n, e) == VK_SUCCESS)
    for (uint32_t k = 0; k < n && !found; k++) found = !strcmp(e[k].extensionName, ext);
  free(e);
  return found;
}

static VKAPI_ATTR VkResult VKAPI_CALL fs_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                                      const VkAllocationCallbacks *alloc, VkDevice *out) {
  VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)ci->pNext;
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = (VkLayerDeviceCreateInfo *)link->pNext;
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;

  pthread_mutex_lock(&lock);
  Inst *s = inst_of(key_of(pd));
  VkInstance instance = s ? s->instance : VK_NULL_HANDLE;
  int can = s && offers(s, pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  pthread_mutex_unlock(&lock);
  PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
  if (!create) return VK_ERROR_INITIALIZATION_FAILED;

  /* the same request, with the extension named and its feature on (where the app has not) */
  VkDeviceCreateInfo mine = *ci;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR feat = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, .pipelineExecutableInfo = VK_TRUE};
  const char **names = NULL;
  if (can) {
    int named = 0, chained = 0;
    for (uint32_t k = 0; k < ci->enabledExtensionCount; k++)
      named |= !strcmp(ci->ppEnabledExtensionNames[k], VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    for (const VkBaseInStructure *p = ci->pNext; p; p = p->pNext)
      chained |= p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
    if (!named) {
      names = calloc(ci->enabledExtensionCount + 1, sizeof *names);
      if (!names) return VK_ERROR_OUT_OF_HOST_MEMORY;
      for (uint32_t k = 0; k < ci->enabledExtensionCount; k++) names[k] = ci->ppEnabledExtensionNames[k];
      names[ci->enabledExtensionCount] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
      mine.enabledExtensionCount = ci->enabledExtensionCount + 1;
      mine.ppEnabledExtensionNames = names;
    }
    if (!chained) { feat.pNext = (void *)ci->pNext; mine.pNext = &feat; }
  }
  VkResult r = create(pd, &mine, alloc, out);
  free(names);
  if (r != VK_SUCCESS) return r;

  FILE *f = out_open();
  fprintf(f, "vkstats device: %s\n", can ? "pipeline statistics on" : "the driver does not offer VK_KHR_pipeline_executable_properties");
  out_close(f);
  pthread_mutex_lock(&lock);
  Dev *d = dev_of(NULL);
  if (d) {
    d->key = key_of(*out);
    d->device = *out;
    d->stats = can;
    d->gdpa = gdpa;
    d->destroy = (PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice");
    d->create_module = (PFN_vkCreateShaderModule)gdpa(*out, "vkCreateShaderModule");
    d->create_compute = (PFN_vkCreateComputePipelines)gdpa(*out, "vkCreateComputePipelines");
    d->exe_props = can ? (PFN_vkGetPipelineExecutablePropertiesKHR)gdpa(*out, "vkGetPipelineExecutablePropertiesKHR") : NULL;
    d->exe_stats = can ? (PFN_vkGetPipelineExecutableStatisticsKHR)gdpa(*out, "vkGetPipelineExecutableStatisticsKHR") : NULL;
    d->exe_ir = can ? (PFN_vkGetPipelineExecutableInternalRepresentationsKHR)gdpa(*out, "vkGetPipelineExecutableInternalRepresentationsKHR") : NULL;
    if (!d->exe_props || !d->exe_stats) d->stats = 0;
  }
  pthread_mutex_unlock(&lock);
  return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL fs_DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc) {
  pthread_mutex_lock(&lock);
  Dev *d = dev_of(key_of(device));
  PFN_vkDestroyDevice destroy = d ? d->destroy : NULL;
  if (d) memset(d, 0, sizeof *d);
  pthread_mutex_unlock(&lock);
  if (destroy) destroy(device, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL fs_CreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo *ci,
                                                            const VkAllocationCallbacks *alloc, VkShaderModule *out) {
  pthread_mutex_lock(&lock);
  Dev *d = dev_of(key_of(device));
  PFN_vkCreateShaderModule create = d ? d->create_module : NULL;
  pthread_mutex_unlock(&lock);
  if (!create) return VK_ERROR_INITIALIZATION_FAILED;
  VkResult r = create(device, ci, alloc, out);
  if (r != VK_SUCCESS) return r;
  uint64_t h = fnv(ci->pCode, ci->codeSize);
  const char *dir = getenv("FS_VKSTATS_SPIRV");
  if (dir && *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx.spv", dir, (unsigned long long)h);
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(ci->pCode, 1, ci->codeSize, f); fclose(f); }
  }
  pthread_mutex_lock(&lock);
  mods[next_mod] = (Mod){*out, h, ci->codeSize, local_size(ci->pCode, ci->codeSize)};
  next_mod = (next_mod + 1) % MAXMOD;
  if (n_mods < MAXMOD) n_mods++;
  pthread_mutex_unlock(&lock);
  return VK_SUCCESS;
}

/* a pipeline stage's SPIR-V: its module's, or the create info chained in its place */
static Mod module_of(const VkPipelineShaderStageCreateInfo *st) {
  for (const VkBaseInStructure *p = st->pNext; p; p = p->pNext)
    if (p->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO) {
      const VkShaderModuleCreateInfo *m = (const VkShaderModuleCreateInfo *)p;
      return (Mod){VK_NULL_HANDLE, fnv(m->pCode, m->codeSize), m->codeSize, local_size(m->pCode, m->codeSize)};
    }
  Mod found = {0};
  pthread_mutex_lock(&lock);
  for (size_t k = 0; k < n_mods; k++)
    if (mods[k].module == st->module) { found = mods[k]; break; }
  pthread_mutex_unlock(&lock);
  return found;
}

/* FS_VKSTATS_IR: executable e's internal representations into DIR/SEQ-E-K.txt (or .bin); how many */
static unsigned dump_ir(Dev *d, VkPipeline pipeline, uint32_t e, unsigned long n, const char *dir) {
  VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline, .executableIndex = e};
  uint32_t nr = 0;
  if (!d->exe_ir || d->exe_ir(d->device, &ei, &nr, NULL) != VK_SUCCESS || !nr) return 0;
  VkPipelineExecutableInternalRepresentationKHR *r = calloc(nr, sizeof *r);
  if (!r) return 0;
  for (uint32_t k = 0; k < nr; k++) r[k].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
  unsigned written = 0;
  if (d->exe_ir(d->device, &ei, &nr, r) == VK_SUCCESS) {   /* the sizes first, then the data */
    for (uint32_t k = 0; k < nr; k++) r[k].pData = r[k].dataSize ? malloc(r[k].dataSize) : NULL;
    VkResult got = d->exe_ir(d->device, &ei, &nr, r);
    for (uint32_t k = 0; k < nr; k++) {
      if ((got == VK_SUCCESS || got == VK_INCOMPLETE) && r[k].pData) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%lu-%u-%u.%s", dir, n, e, k, r[k].isText ? "txt" : "bin");
        FILE *f = fopen(path, "wb");
        if (f) {
          fwrite(r[k].pData, 1, r[k].isText && r[k].dataSize && !((char *)r[k].pData)[r[k].dataSize - 1] ? r[k].dataSize - 1 : r[k].dataSize, f);
          fclose(f);
          written++;
        }
      }
      free(r[k].pData);
    }
  }
  free(r);
  return written;
}

static void report(Dev *d, VkPipeline pipeline, const VkComputePipelineCreateInfo *ci) {
  Mod m = module_of(&ci->stage);
  pthread_mutex_lock(&lock);
  unsigned long n = ++seq;
  pthread_mutex_unlock(&lock);
  FILE *f = out_open();
  fprintf(f, "vkstats pipeline %lu module %016llx spirv %zu wg %u:", n, (unsigned long long)m.hash, m.bytes, m.wg);
  VkPipelineInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
  uint32_t ne = 0;
  if (!d->stats) fprintf(f, " no statistics (not offered)");
  else if (d->exe_props(d->device, &info, &ne, NULL) != VK_SUCCESS || !ne) fprintf(f, " no executables");
  else {
    VkPipelineExecutablePropertiesKHR *pe = calloc(ne, sizeof *pe);
    for (uint32_t e = 0; pe && e < ne; e++) pe[e].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
    if (pe && d->exe_props(d->device, &info, &ne, pe) == VK_SUCCESS)
      for (uint32_t e = 0; e < ne; e++) {
        fprintf(f, " exe \"%s\" subgroup %u |", pe[e].name, pe[e].subgroupSize);
        const char *ir = getenv("FS_VKSTATS_IR");
        if (ir && *ir) fprintf(f, " ir %u;", dump_ir(d, pipeline, e, n, ir));
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline, .executableIndex = e};
        uint32_t ns = 0;
        if (d->exe_stats(d->device, &ei, &ns, NULL) != VK_SUCCESS || !ns) { fprintf(f, " no statistics"); continue; }
        VkPipelineExecutableStatisticKHR *s = calloc(ns, sizeof *s);
        for (uint32_t k = 0; s && k < ns; k++) s[k].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
        if (s && d->exe_stats(d->device, &ei, &ns, s) == VK_SUCCESS)
          for (uint32_t k = 0; k < ns; k++) {
            fprintf(f, " %s=", s[k].name);
            switch (s[k].format) {
              case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(f, "%s", s[k].value.b32 ? "true" : "false"); break;
              case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(f, "%lld", (long long)s[k].value.i64); break;
              case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: fprintf(f, "%llu", (unsigned long long)s[k].value.u64); break;
              case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: fprintf(f, "%g", s[k].value.f64); break;
              default: fprintf(f, "?"); break;
            }
            fprintf(f, ";");
          }
        free(s);
      }
    free(pe);
  }
  fprintf(f, "\n");
  out_close(f);
}

static VKAPI_ATTR VkResult VKAPI_CALL fs_CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t n,
                                                                const VkComputePipelineCreateInfo *ci,
                                                                const VkAllocationCallbacks *alloc, VkPipeline *out) {
  pthread_mutex_lock(&lock);
  Dev *d = dev_of(key_of(device));
  Dev copy = d ? *d : (Dev){0};
  pthread_mutex_unlock(&lock);
  if (!copy.create_compute) return VK_ERROR_INITIALIZATION_FAILED;
  VkComputePipelineCreateInfo *mine = NULL;
  if (copy.stats && n) {
    mine = calloc(n, sizeof *mine);
    if (!mine) return VK_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(mine, ci, n * sizeof *mine);
    const char *ir = getenv("FS_VKSTATS_IR");
    for (uint32_t k = 0; k < n; k++)
      mine[k].flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR | (ir && *ir ? VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR : 0);
  }
  VkResult r = copy.create_compute(device, cache, n, mine ? mine : ci, alloc, out);
  free(mine);
  if (r == VK_SUCCESS)
    for (uint32_t k = 0; k < n; k++) report(&copy, out[k], &ci[k]);
  return r;
}

#define HOOK(fn) if (!strcmp(name, "vk" #fn)) return (PFN_vkVoidFunction)fs_##fn

/* the device's calls this layer takes (asked for through either GetProcAddr), NULL for the others */
static PFN_vkVoidFunction device_hook(const char *name) {
  HOOK(GetDeviceProcAddr);
  HOOK(DestroyDevice);
  HOOK(CreateShaderModule);
  HOOK(CreateComputePipelines);
  return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fs_GetDeviceProcAddr(VkDevice device, const char *name) {
  PFN_vkVoidFunction mine = device_hook(name);
  if (mine) return mine;
  pthread_mutex_lock(&lock);
  Dev *d = device ? dev_of(key_of(device)) : NULL;
  PFN_vkGetDeviceProcAddr next = d ? d->gdpa : NULL;
  pthread_mutex_unlock(&lock);
  return next ? next(device, name) : NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fs_GetInstanceProcAddr(VkInstance instance, const char *name) {
  HOOK(GetInstanceProcAddr);
  HOOK(CreateInstance);
  HOOK(DestroyInstance);
  HOOK(CreateDevice);
  PFN_vkVoidFunction mine = device_hook(name);
  if (mine) return mine;
  pthread_mutex_lock(&lock);
  Inst *s = instance ? inst_of(key_of(instance)) : NULL;
  PFN_vkGetInstanceProcAddr next = s ? s->gipa : NULL;
  pthread_mutex_unlock(&lock);
  return next ? next(instance, name) : NULL;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
  if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT) return VK_ERROR_INITIALIZATION_FAILED;
  if (v->loaderLayerInterfaceVersion < 2) return VK_ERROR_INITIALIZATION_FAILED;
  v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = fs_GetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = fs_GetDeviceProcAddr;
  v->pfnGetPhysicalDeviceProcAddr = NULL;
  return VK_SUCCESS;
}
