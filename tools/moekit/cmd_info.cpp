// `moekit info`: what this build is and which device it would run on.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "moekit/plan.h"
#include "moekit/system_info.h"

namespace moekit::cli {
namespace {

std::string version_string(int v) {  // 13000 -> "13.0"
  return v <= 0 ? "unknown" : fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }
double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

nlohmann::ordered_json to_json(const BuildInfo& b, const SystemInfo& s) {
  nlohmann::ordered_json j;
  j["build"] = {{"version", b.version},         {"cuda", b.cuda},
                {"cuda_archs", b.cuda_archs},   {"cutlass", b.cutlass_version},
                {"build_type", b.build_type},   {"cxx_compiler", b.cxx_compiler},
                {"cuda_compiler", b.cuda_compiler}};
  j["cuda_driver"] = version_string(s.cuda_driver_version);
  j["cuda_runtime"] = version_string(s.cuda_runtime_version);
  j["cpu_threads"] = s.cpu_threads;
  j["devices"] = nlohmann::ordered_json::array();
  for (const auto& d : s.devices) {
    j["devices"].push_back({{"index", d.index},
                            {"name", d.name},
                            {"compute_capability", d.compute_capability()},
                            {"sm_count", d.sm_count},
                            {"memory_bytes", d.total_memory_bytes},
                            {"l2_cache_bytes", d.l2_cache_bytes},
                            {"shared_memory_per_block_optin_bytes", d.shared_memory_per_block_optin_bytes},
                            {"memory_clock_khz", d.memory_clock_khz},
                            {"memory_bus_width_bits", d.memory_bus_width_bits},
                            {"sm_clock_khz", d.sm_clock_khz},
                            {"pci_bus_id", d.pci_bus_id}});
  }
  const auto sel = select_device(BackendChoice::kAuto, default_registry());
  j["backend"] = backend_kind_name(sel->device.backend);
  j["backend_reason"] = sel->decision.reason;
  if (s.devices.empty()) j["no_gpu_reason"] = s.no_gpu_reason;
  return j;
}

void print_text(const BuildInfo& b, const SystemInfo& s) {
  fmt::print("moekit {} ({} build)\n", b.version, b.build_type);
  fmt::print("  compilers   : {}{}\n", b.cxx_compiler, b.cuda ? fmt::format(", {}", b.cuda_compiler) : std::string());
  if (b.cuda) {
    fmt::print("  CUDA        : on, archs {}, CUTLASS {}\n", b.cuda_archs, b.cutlass_version);
    fmt::print("  CUDA driver : {}, runtime {}\n", version_string(s.cuda_driver_version), version_string(s.cuda_runtime_version));
  } else {
    fmt::print("  CUDA        : off (CPU-only build)\n");
  }
  fmt::print("  CPU threads : {}\n", s.cpu_threads);
  if (s.devices.empty()) {
    fmt::print("no GPU: CPU backend ({})\n", s.no_gpu_reason);
    return;
  }
  for (const auto& d : s.devices) {
    fmt::print("GPU {}: {}\n", d.index, d.name);
    fmt::print("  compute capability : {} (sm_{}{})\n", d.compute_capability(), d.cc_major, d.cc_minor);
    fmt::print("  SMs                : {} at {:.0f} MHz\n", d.sm_count, d.sm_clock_khz / 1e3);
    fmt::print("  memory             : {:.1f} GiB, {}-bit bus at {:.0f} MHz (datasheet peak {:.0f} GB/s)\n",
               gib(d.total_memory_bytes), d.memory_bus_width_bits, d.memory_clock_khz / 1e3, d.theoretical_bandwidth_gbps());
    fmt::print("  L2 cache           : {:.1f} MiB\n", mib(d.l2_cache_bytes));
    fmt::print("  shared memory      : {} KiB per block (opt-in), {} KiB per SM\n",
               d.shared_memory_per_block_optin_bytes / 1024, d.shared_memory_per_sm_bytes / 1024);
    if (!d.pci_bus_id.empty()) fmt::print("  PCI bus            : {}\n", d.pci_bus_id);
  }
  const auto sel = select_device(BackendChoice::kAuto, default_registry());
  fmt::print("MoE backend: {} ({})\n", backend_kind_name(sel->device.backend), sel->decision.reason);
}

}  // namespace

CommandAction add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the build (version, CUDA, archs) and the device it runs on");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  return [cmd, json]() {
    if (!cmd->parsed()) return -1;
    const BuildInfo b = build_info();
    const SystemInfo s = query_system();
    if (*json) {
      fmt::print("{}\n", to_json(b, s).dump(2));
    } else {
      print_text(b, s);
    }
    return 0;
  };
}

int fail(const Status& status) {
  fmt::print(stderr, "moekit: error: {}\n", status.to_string());
  return 1;
}

}  // namespace moekit::cli
