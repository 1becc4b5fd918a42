// Where each knob's value comes from for one plan: the caller's choice, a tuned table's row, or the
// heuristic (src/runner/knobs.cpp); used by make_plan.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "moekit/plan.h"

namespace moekit {

struct ResolvedKnobs {
  std::map<std::string, KnobSetting> settings;  // every knob of the space, by name
  std::map<std::string, std::string> heuristic;  // the heuristic's value of each
  std::string tuning;                           // MoePlan::tuning
  Status refused;                               // the caller's choice failed check_choice
};

ResolvedKnobs resolve_knobs(const PlanQuery& query, const DeviceTarget& device, const PlanOptions& options,
                            const std::vector<KnobSpec>& space, const Registry& registry);

// Prints `line` to stderr the first time this process sees it (a table miss is said once per key).
void log_table_miss_once(const std::string& line);

// The knob name of a fusion ("fusion.gemm2_finalize").
std::string fusion_knob_name(Fusion f);

}  // namespace moekit
