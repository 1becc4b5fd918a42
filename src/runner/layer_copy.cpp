#include "moekit/layer_copy.h"

namespace moekit {
namespace {

// A copy of `src` on `device` (kept in `storage`), or `src` itself when it is absent or, with
// `share_resident`, already there.
Status copy_one(Device device, const TensorView& src, TensorView& dst, std::vector<Tensor>& storage, bool share_resident = true) {
  if (!src.defined() || (share_resident && src.device() == device)) {
    dst = src;
    return Status::Ok();
  }
  auto t = Tensor::empty(src.dtype(), src.shape(), device);
  if (!t.ok()) return t.status();
  MOEKIT_RETURN_IF_ERROR(copy_tensor(*t, src));
  dst = t->view();
  storage.push_back(std::move(t).value());
  return Status::Ok();
}

// Every weight tensor of `w` into `c` (c.weights starts as w: unlisted fields stay as given).
Status copy_weight_fields(Device device, const MoeWeights& w, LayerCopy& c, bool share_resident) {
  c.weights = w;
  for (auto [from, to] : {std::pair{&w.w13, &c.weights.w13}, {&w.w2, &c.weights.w2}, {&w.w13_bias, &c.weights.w13_bias},
                          {&w.w2_bias, &c.weights.w2_bias}, {&w.w13_scale, &c.weights.w13_scale}, {&w.w2_scale, &c.weights.w2_scale},
                          {&w.w13_zero_point, &c.weights.w13_zero_point}, {&w.w2_zero_point, &c.weights.w2_zero_point},
                          {&w.w13_global_scale, &c.weights.w13_global_scale}, {&w.w2_global_scale, &c.weights.w2_global_scale},
                          {&w.w13_input_scale, &c.weights.w13_input_scale}, {&w.w2_input_scale, &c.weights.w2_input_scale},
                          {&w.w13_pre_quant_scale, &c.weights.w13_pre_quant_scale},
                          {&w.w2_pre_quant_scale, &c.weights.w2_pre_quant_scale}, {&w.expert_map, &c.weights.expert_map}})
    MOEKIT_RETURN_IF_ERROR(copy_one(device, *from, *to, c.storage, share_resident));
  return Status::Ok();
}

}  // namespace

Result<LayerCopy> copy_weights(Device device, const MoeWeights& w) {
  LayerCopy c;
  MOEKIT_RETURN_IF_ERROR(copy_weight_fields(device, w, c, /*share_resident=*/false));
  return c;
}

Result<LayerCopy> copy_layer(Device device, const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out) {
  LayerCopy c;
  MOEKIT_RETURN_IF_ERROR(copy_weight_fields(device, w, c, /*share_resident=*/true));
  auto& s = c.storage;
  for (auto [from, to] : {std::pair{&in.hidden, &c.inputs.hidden}, {&in.router_logits, &c.inputs.router_logits},
                          {&in.e_score_correction_bias, &c.inputs.e_score_correction_bias}, {&in.topk_ids, &c.inputs.topk_ids},
                          {&in.topk_weights, &c.inputs.topk_weights}, {&in.masked_m, &c.inputs.masked_m},
                          {&in.expert_offsets, &c.inputs.expert_offsets}, {&in.gather_index, &c.inputs.gather_index},
                          {&in.row_weights, &c.inputs.row_weights}})
    MOEKIT_RETURN_IF_ERROR(copy_one(device, *from, *to, s));
  for (auto [from, to] : {std::pair{&out.out, &c.outputs.out}, {&out.topk_ids, &c.outputs.topk_ids}, {&out.topk_weights, &c.outputs.topk_weights}})
    MOEKIT_RETURN_IF_ERROR(copy_one(device, *from, *to, s));
  return c;
}

}  // namespace moekit
