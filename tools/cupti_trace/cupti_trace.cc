// A kernel timeline recorder loaded by the CUDA driver into any process:
//
//   CUDA_INJECTION64_PATH=build/tools/cupti_trace/libdynsparse_cupti_trace.so
//   DYNSPARSE_TRACE_OUT=trace.csv dynsparse-bench ...   (one command line)
//
// Nsight Systems is not available on our GPU machine, and Nsight Compute
// times kernels one by one, serialised and with cold caches, so neither
// shows what a decode step costs inside its CUDA graph: the gaps between
// dependent kernels, what programmatic dependent launch overlaps and what
// the side stream runs beside the main one. CUPTI's concurrent-kernel,
// memcpy and memset activities record every kernel and copy, graph nodes
// included, with device timestamps and without serialising kernels. At exit
// the records go to DYNSPARSE_TRACE_OUT as CSV (one row per kernel or copy;
// a copy's name is "memcpy HtoD 12 B", grid and block 0);
// tools/cupti_trace/step_table.py turns them into per-step tables.
//
// DYNSPARSE_TRACE_LAST=N keeps only the last N graph launches' kernels (and
// every kernel outside graphs), so long runs stay small.
//
// DYNSPARSE_TRACE_API=1 also records the CUDA runtime and driver API calls
// (rows named "api <function>", host timestamps in the same clock, stream
// and grid 0): an eager step's host time between and inside its launches,
// which tools/cupti_trace/host_gaps.py charges to the kernels launched.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint32_t graph = 0;
  uint64_t graph_node = 0;
  int32_t grid = 0;
  int32_t block = 0;
  int32_t registers = 0;
  std::string name;
};

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kAlign = 8;

std::mutex records_mutex;
std::vector<KernelRecord>* records = nullptr;
size_t keep_launches = SIZE_MAX;  // DYNSPARSE_TRACE_LAST

// DYNSPARSE_TRACE_LAST as a whole number (all launches when unset); false
// after saying what is wrong with it.
bool ReadKeepLaunches() {
  const char* last = std::getenv("DYNSPARSE_TRACE_LAST");
  if (last == nullptr) return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(last, &end, 10);
  if (*last == '\0' || *last == '-' || *end != '\0' || errno != 0) {
    std::fprintf(stderr,
                 "cupti_trace: DYNSPARSE_TRACE_LAST='%s' is not a whole "
                 "number of graph launches; recording nothing\n",
                 last);
    return false;
  }
  keep_launches = static_cast<size_t>(n);
  return true;
}

void Fail(const char* what, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "cupti_trace: %s failed: %s\n", what,
               text != nullptr ? text : "unknown error");
}

std::string Demangled(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && plain != nullptr ? plain : name;
  std::free(plain);
  // Commas would split the CSV field; template arguments keep their text.
  std::replace(out.begin(), out.end(), ',', ';');
  return out;
}

const char* CopyKind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    default:
      return "other";
  }
}

// The fields every timed activity record (kernel, memcpy, memset) has.
template <typename Activity>
KernelRecord Timed(const Activity* a) {
  KernelRecord r;
  r.start = a->start;
  r.end = a->end;
  r.stream = a->streamId;
  r.correlation = a->correlationId;
  r.graph = a->graphId;
  r.graph_node = a->graphNodeId;
  return r;
}

KernelRecord CopyRecord(const CUpti_Activity* record) {
  if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
    const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    KernelRecord r = Timed(c);
    r.name = std::string("memcpy ") + CopyKind(c->copyKind) + " " +
             std::to_string(c->bytes) + " B";
    return r;
  }
  const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
  KernelRecord r = Timed(m);
  r.name = "memset " + std::to_string(m->bytes) + " B";
  return r;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size,
                              size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer,
                              size_t /*size*/, size_t valid_size) {
  std::vector<KernelRecord> batch;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) ==
         CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY ||
        record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      batch.push_back(CopyRecord(record));
      continue;
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
        record->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      KernelRecord r;
      r.start = api->start;
      r.end = api->end;
      r.correlation = api->correlationId;
      const char* name = nullptr;
      cuptiGetCallbackName(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME
                               ? CUPTI_CB_DOMAIN_RUNTIME_API
                               : CUPTI_CB_DOMAIN_DRIVER_API,
                           api->cbid, &name);
      r.name = std::string("api ") + (name != nullptr ? name : "?");
      batch.push_back(std::move(r));
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    KernelRecord r = Timed(k);
    r.grid = k->gridX * k->gridY * k->gridZ;
    r.block = k->blockX * k->blockY * k->blockZ;
    r.registers = k->registersPerThread;
    r.name = Demangled(k->name);
    batch.push_back(std::move(r));
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped > 0) {
    std::fprintf(stderr, "cupti_trace: %zu records dropped\n", dropped);
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(records_mutex);
  for (KernelRecord& r : batch) records->push_back(std::move(r));
}

// Kernels of the last `keep` graph launches (a launch is one correlation id
// shared by all its nodes), plus every kernel launched outside a graph.
std::vector<const KernelRecord*> Kept(const std::vector<KernelRecord>& all,
                                      size_t keep) {
  std::map<uint32_t, uint64_t> launch_start;
  for (const KernelRecord& r : all) {
    if (r.graph == 0) continue;
    auto [it, fresh] = launch_start.emplace(r.correlation, r.start);
    if (!fresh) it->second = std::min(it->second, r.start);
  }
  std::vector<std::pair<uint64_t, uint32_t>> order;
  for (const auto& [correlation, start] : launch_start) {
    order.emplace_back(start, correlation);
  }
  std::sort(order.begin(), order.end());
  std::set<uint32_t> kept_launches;
  for (size_t i = order.size() > keep ? order.size() - keep : 0;
       i < order.size(); ++i) {
    kept_launches.insert(order[i].second);
  }
  std::vector<const KernelRecord*> out;
  for (const KernelRecord& r : all) {
    if (r.graph == 0 || kept_launches.count(r.correlation) > 0) {
      out.push_back(&r);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const KernelRecord* a, const KernelRecord* b) {
              return a->start < b->start;
            });
  return out;
}

void AtExit() {
  const CUptiResult flushed = cuptiActivityFlushAll(1);
  if (flushed != CUPTI_SUCCESS) Fail("cuptiActivityFlushAll", flushed);
  const char* path = std::getenv("DYNSPARSE_TRACE_OUT");
  std::lock_guard<std::mutex> lock(records_mutex);
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) {
    std::fprintf(stderr, "cupti_trace: cannot write %s\n", path);
    return;
  }
  std::fprintf(out,
               "start_ns,end_ns,stream,correlation,graph,graph_node,grid,"
               "block,registers,name\n");
  const std::vector<const KernelRecord*> kept = Kept(*records, keep_launches);
  for (const KernelRecord* r : kept) {
    std::fprintf(out, "%llu,%llu,%u,%u,%u,%llu,%d,%d,%d,%s\n",
                 static_cast<unsigned long long>(r->start),
                 static_cast<unsigned long long>(r->end), r->stream,
                 r->correlation, r->graph,
                 static_cast<unsigned long long>(r->graph_node), r->grid,
                 r->block, r->registers, r->name.c_str());
  }
  std::fclose(out);
  std::fprintf(stderr, "cupti_trace: %zu of %zu kernels -> %s\n", kept.size(),
               records->size(), path);
}

}  // namespace

// The driver calls this once, at CUDA initialisation, in a process started
// with CUDA_INJECTION64_PATH naming this library.
extern "C" int InitializeInjection(void) {
  if (std::getenv("DYNSPARSE_TRACE_OUT") == nullptr) {
    std::fprintf(stderr, "cupti_trace: DYNSPARSE_TRACE_OUT is not set\n");
    return 1;
  }
  if (!ReadKeepLaunches()) return 1;
  records = new std::vector<KernelRecord>();
  CUptiResult result =
      cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  if (result != CUPTI_SUCCESS) {
    Fail("cuptiActivityRegisterCallbacks", result);
    return 0;
  }
  for (const CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET}) {
    result = cuptiActivityEnable(kind);
    if (result != CUPTI_SUCCESS) {
      Fail("cuptiActivityEnable", result);
      return 0;
    }
  }
  const char* api = std::getenv("DYNSPARSE_TRACE_API");
  if (api != nullptr && std::strcmp(api, "1") == 0) {
    for (const CUpti_ActivityKind kind :
         {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
      result = cuptiActivityEnable(kind);
      if (result != CUPTI_SUCCESS) {
        Fail("cuptiActivityEnable (API)", result);
        return 0;
      }
    }
  }
  std::atexit(AtExit);
  return 1;
}
