// OpPolicy: per op, the precision an autocast region runs it in (Note [Op lists]), with the lists
// adjustable through GRADWIRE_AMP_ALLOW and GRADWIRE_AMP_DENY.
//
//   OpPolicy p = OpPolicy::defaults();
//   p.apply_overrides(allow_env, deny_env);     // "" leaves a list as it is
//   Precision out = p.decide("relu", /*any_input_fp32=*/x.is_fp32());
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace gw::amp {

enum class Precision { kFloat32, kFloat16 };

// "fp32", "fp16".
const char* to_string(Precision p);

enum class OpList { kAllow, kDeny, kInfer };

// "allow", "deny", "infer".
const char* to_string(OpList l);

// Note [Op lists]
// Mixed precision does not cast every op to fp16: each op sits in one of three lists.
//
//   allow  always run in fp16. Ops dominated by large dot products (matmul, linear, convolution)
//          gain the most from fp16 arithmetic and tensor cores, and accumulate in fp32 inside the
//          kernel, so they lose little accuracy.
//   deny   always run in fp32. Ops whose result can leave fp16's range or lose too many digits:
//          exp and log, softmax and log_softmax, cross-entropy and other losses, sums and means
//          over many elements. A softmax in fp16 overflows on logits above ~11 (e^11 > 65504).
//   infer  run in the precision of the inputs: fp32 as soon as one input is fp32, else fp16.
//          Ops that are exact or nearly so in either type (relu, pooling, reshape and flatten)
//          are not worth a cast of their own; following the inputs avoids casting back and forth.
//
// The defaults follow the lists the field has settled on. PyTorch's autocast casts matmul, linear
// and the convolutions to fp16, keeps softmax, log_softmax, cross-entropy, exp, log and the
// reductions in fp32, and leaves everything else (relu, pooling, views) in whatever type its
// inputs have. PaddlePaddle's AMP has the same three lists under the names white (allow), black
// (deny) and gray (infer). For the reference trainer's ops that gives: allow linear, conv2d; deny
// softmax_cross_entropy; infer relu, max_pool2d, flatten.
//
// GRADWIRE_AMP_ALLOW and GRADWIRE_AMP_DENY move ops between the lists (apply_overrides): naming
// an op in one of them puts it in that list, whatever list it was in before.

// Splits a comma-separated list ("linear, conv2d") into its items, each trimmed of spaces and
// tabs. "" or a text of blanks only gives an empty vector. An empty item ("a,,b", "a,", ",a")
// throws std::invalid_argument naming `source` (the variable the text came from, e.g.
// "GRADWIRE_AMP_ALLOW") and the text.
std::vector<std::string> parse_op_list(const std::string& text, const std::string& source);

class OpPolicy {
 public:
  // The reference trainer's ops with the standard lists (Note [Op lists]): allow (fp16) linear,
  // conv2d; deny (fp32) softmax_cross_entropy; infer relu, max_pool2d, flatten. Declaration order:
  // linear, conv2d, relu, max_pool2d, flatten, softmax_cross_entropy.
  static OpPolicy defaults();

  // The known ops and their lists, in this order. Throws std::invalid_argument on an empty op
  // list, an empty name, a name given twice, or a name with a comma, space or tab (which no
  // GRADWIRE_AMP_ALLOW / GRADWIRE_AMP_DENY text could name).
  explicit OpPolicy(std::vector<std::pair<std::string, OpList>> ops);

  // Moves every op named in allow_text into allow and every op named in deny_text into deny
  // (parse_op_list with sources allow_source and deny_source); "" changes nothing. An op named
  // twice in one list is fine. Throws std::invalid_argument, leaving the policy unchanged, on an
  // empty item, an unknown op (naming the variable and the op, and listing the known ops) or an
  // op named in both lists (naming both variables and the op).
  void apply_overrides(const std::string& allow_text, const std::string& deny_text,
                       const std::string& allow_source = "GRADWIRE_AMP_ALLOW",
                       const std::string& deny_source = "GRADWIRE_AMP_DENY");

  // The list `op` is in. Throws std::invalid_argument naming the op and listing the known ones.
  OpList list_of(const std::string& op) const;

  // The precision `op` runs in: allow -> fp16; deny -> fp32; infer -> fp32 when any input is fp32
  // (any_input_fp32), else fp16. An unknown op throws as in list_of.
  Precision decide(const std::string& op, bool any_input_fp32) const;

  // The known ops, in declaration order.
  const std::vector<std::string>& ops() const { return names_; }
  // The ops in `list`, in declaration order.
  std::vector<std::string> ops_in(OpList list) const;

  // "allow: linear, conv2d; deny: softmax_cross_entropy; infer: relu, max_pool2d, flatten"; an
  // empty list prints "-".
  std::string describe() const;

 private:
  // The index of `op` in names_, or names_.size().
  std::size_t find(const std::string& op) const;
  // "linear, conv2d, ...": every known op, for error messages.
  std::string known_ops() const;

  std::vector<std::string> names_;
  std::vector<OpList> lists_;  // lists_[i] is names_[i]'s list
};

}  // namespace gw::amp
