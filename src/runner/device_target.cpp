// Targets a plan can be made for: the host CPU, the GPUs of this process, and named architectures
// (`moekit explain --arch sm90`) described by their published figures.
#include <fmt/format.h>
#include <omp.h>

#include "moekit/plan.h"
#include "moekit/system_info.h"

namespace moekit {
namespace {

struct NamedArch {
  std::string_view arch;
  std::string_view example;
  int cc;
  int sms;
  int64_t smem;
};

// One representative part per architecture (datasheet SM counts; opt-in shared memory per block).
constexpr NamedArch kNamedArchs[] = {
    {"sm80", "A100 SXM", 80, 108, 166912},
    {"sm89", "L40S", 89, 142, 101376},
    {"sm90", "H100/H200 SXM", 90, 132, 232448},
    {"sm100", "B200", 100, 148, 232448},
};

}  // namespace

DeviceTarget DeviceTarget::host_cpu() {
  const int threads = omp_get_max_threads();
  return {.backend = BackendKind::kCpu, .name = fmt::format("cpu ({} threads)", threads), .threads = threads, .real = true};
}

Result<DeviceTarget> DeviceTarget::named(std::string_view arch) {
  // A named CPU has no thread count, so its plans are the same on every machine (golden files).
  if (arch == "cpu") return DeviceTarget{.backend = BackendKind::kCpu, .name = "cpu (named)"};
  std::string known = "cpu";
  for (const auto& a : kNamedArchs) {
    if (a.arch == arch)
      return DeviceTarget{.backend = BackendKind::kCuda, .name = fmt::format("{} ({}, named)", a.arch, a.example),
                          .compute_capability = a.cc, .num_sms = a.sms, .smem_per_block = a.smem};
    known += fmt::format(", {}", a.arch);
  }
  return Status::InvalidArgument(fmt::format("arch='{}' is not a known architecture (known: {})", arch, known));
}

std::string_view backend_choice_name(BackendChoice b) {
  switch (b) {
    case BackendChoice::kAuto: return "auto";
    case BackendChoice::kCpu: return "cpu";
    case BackendChoice::kCuda: return "cuda";
  }
  return "unknown";
}

Result<BackendChoice> parse_backend_choice(std::string_view s) {
  for (auto b : {BackendChoice::kAuto, BackendChoice::kCpu, BackendChoice::kCuda})
    if (backend_choice_name(b) == s) return b;
  return Status::InvalidArgument(fmt::format("backend='{}' is not one of auto, cpu, cuda", s));
}

Result<DeviceSelection> select_device(BackendChoice choice, const Registry& registry) {
  const char* rule = "select_device";
  if (choice == BackendChoice::kCpu) return DeviceSelection{DeviceTarget::host_cpu(), {true, rule, "backend=cpu was asked for"}};
  const SystemInfo sys = query_system();
  std::string why_not;
  if (!registry.has_backend(BackendKind::kCuda)) {
    why_not = "this build has no CUDA MoE backend";
  } else if (sys.devices.empty()) {
    why_not = fmt::format("no GPU ({})", sys.no_gpu_reason);
  } else {
    const CudaDeviceInfo& d = sys.devices.front();
    DeviceTarget t{.backend = BackendKind::kCuda, .name = d.name, .compute_capability = d.cc_major * 10 + d.cc_minor,
                   .num_sms = d.sm_count, .smem_per_block = d.shared_memory_per_block_optin_bytes, .real = true};
    return DeviceSelection{t, {true, rule, fmt::format("backend={}: GPU 0 is {} (sm_{})", backend_choice_name(choice), d.name, t.compute_capability)}};
  }
  if (choice == BackendChoice::kCuda) return Status::Unsupported(fmt::format("backend=cuda: {}", why_not));
  return DeviceSelection{DeviceTarget::host_cpu(), {true, rule, fmt::format("backend=auto: {}, so the CPU backend runs", why_not)}};
}

}  // namespace moekit
