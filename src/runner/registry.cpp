// The registry of stage and whole-layer implementations, keyed by (input format, backend).
#include <algorithm>

#include <fmt/format.h>

#include "moekit/stages.h"

namespace moekit {
namespace {

bool accepts(const std::vector<InputFormat>& formats, InputFormat f) {
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

template <typename List>
bool name_taken(const List& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(), [&](const auto& i) { return i.name == name; });
}

}  // namespace

Status Registry::add_stage(StageImpl impl) {
  if (impl.name.empty() || impl.run == nullptr) return Status::InvalidArgument("stage implementation: a name and a run function are required");
  if (impl.first > impl.last)
    return Status::InvalidArgument(fmt::format("stage implementation '{}': first stage {} comes after last stage {}", impl.name,
                                               stage_name(impl.first), stage_name(impl.last)));
  if (impl.formats.empty()) return Status::InvalidArgument(fmt::format("stage implementation '{}': no input formats", impl.name));
  if (name_taken(stages_, impl.name) || name_taken(fused_, impl.name))
    return Status::InvalidArgument(fmt::format("stage implementation '{}': the name is registered already", impl.name));
  for (InputFormat f : impl.formats)
    if (find_stage(f, impl.backend, impl.first, impl.last) != nullptr)
      return Status::InvalidArgument(fmt::format("stage implementation '{}': {}..{} for ({}, {}) is registered already", impl.name,
                                                 stage_name(impl.first), stage_name(impl.last), input_format_name(f),
                                                 backend_kind_name(impl.backend)));
  stages_.push_back(std::move(impl));
  return Status::Ok();
}

Status Registry::add_fused_layer(FusedLayerImpl impl) {
  if (impl.name.empty() || impl.run == nullptr || impl.declines == nullptr)
    return Status::InvalidArgument("whole-layer implementation: a name, a run function and a declines function are required");
  if (impl.formats.empty()) return Status::InvalidArgument(fmt::format("whole-layer implementation '{}': no input formats", impl.name));
  if (name_taken(stages_, impl.name) || name_taken(fused_, impl.name))
    return Status::InvalidArgument(fmt::format("whole-layer implementation '{}': the name is registered already", impl.name));
  fused_.push_back(std::move(impl));
  return Status::Ok();
}

const StageImpl* Registry::find_stage(InputFormat format, BackendKind backend, Stage first, Stage last) const {
  for (const auto& s : stages_)
    if (s.backend == backend && s.first == first && s.last == last && accepts(s.formats, format)) return &s;
  return nullptr;
}

std::vector<const FusedLayerImpl*> Registry::fused_layers(InputFormat format, BackendKind backend) const {
  std::vector<const FusedLayerImpl*> out;
  for (const auto& f : fused_)
    if (f.backend == backend && accepts(f.formats, format)) out.push_back(&f);
  return out;
}

bool Registry::has_backend(BackendKind backend) const {
  return std::any_of(stages_.begin(), stages_.end(), [&](const StageImpl& s) { return s.backend == backend; });
}

void Registry::set_knob_space(BackendKind backend, KnobSpaceFn fn) { knob_spaces_[static_cast<int>(backend)] = fn; }

KnobSpaceFn Registry::knob_space(BackendKind backend) const { return knob_spaces_[static_cast<int>(backend)]; }

std::string_view knob_value(const StageContext& context, std::string_view name, std::string_view fallback) {
  for (const KnobSetting& k : context.knobs)
    if (k.name == name) return k.value;
  return fallback;
}

}  // namespace moekit
