#include "plugin/config/params.h"

namespace gw::config {
namespace {

Registry make_registry() {
  Registry r;
  {
    ParamSpec p;
    p.key = keys::kCompressor;
    p.type = ParamType::kEnum;
    p.choices = {"none", "fp16", "topk", "dgc"};
    p.default_text = "none";
    p.description =
        "How gradients are encoded for the exchange: none (fp32 allreduce), fp16 (half-precision "
        "allreduce), topk (top-k with error feedback, any optimizer), dgc (deep gradient "
        "compression: top-k with momentum correction; needs an SGD inner optimizer).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcSparsity;
    p.type = ParamType::kFloatList;
    p.default_text = "0.999";
    p.min = 0;
    p.max = 0.999999;
    p.description =
        "topk/dgc: fraction of each compressed tensor NOT sent per step; a list "
        "(0.75,0.9375,0.984375,0.996,0.999) is a warm-up spread evenly over "
        "GRADWIRE_DGC_RAMPUP_STEPS.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcRampupBeginStep;
    p.type = ParamType::kInt;
    p.default_text = "0";
    p.min = 0;
    p.max = 4294967295;
    p.description =
        "topk/dgc: first step that is compressed; earlier steps are exchanged dense with "
        "ordinary momentum.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcRampupSteps;
    p.type = ParamType::kInt;
    p.default_text = "0";
    p.min = 0;
    p.max = 4294967295;
    p.description =
        "topk/dgc: steps over which a GRADWIRE_DGC_SPARSITY list is spread; after them the last "
        "value holds.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcSampleRatio;
    p.type = ParamType::kFloat;
    p.default_text = "0.01";
    p.min = 1e-6;
    p.max = 1;
    p.description = "topk/dgc: fraction of a tensor sampled to estimate the selection threshold.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcMinNumel;
    p.type = ParamType::kInt;
    p.default_text = "16384";
    p.min = 1;
    p.max = 4294967295;
    p.description = "topk/dgc: tensors with fewer elements are exchanged dense.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcMomentumMasking;
    p.type = ParamType::kBool;
    p.default_text = "1";
    p.description = "dgc: zero the momentum where values were sent (momentum factor masking).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kDgcClipNorm;
    p.type = ParamType::kFloat;
    p.default_text = "0";
    p.min = 0;
    p.max = 1e30;
    p.description =
        "dgc: local gradient clipping, per tensor, to this L2 norm x world_size^-1/2 before "
        "accumulation; 0 turns it off.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kSync;
    p.type = ParamType::kEnum;
    p.choices = {"every_step", "local_sgd", "post_local_sgd", "adaptive_local_sgd"};
    p.default_text = "every_step";
    p.description =
        "When ranks exchange: every_step averages gradients at every step (synchronous SGD); "
        "local_sgd steps locally and averages parameters every GRADWIRE_LOCAL_SGD_K steps; "
        "post_local_sgd is synchronous until GRADWIRE_LOCAL_SGD_BEGIN_STEP, then local_sgd; "
        "adaptive_local_sgd chooses each period from the training loss and learning rate "
        "(AdaComm).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kLocalSgdK;
    p.type = ParamType::kInt;
    p.default_text = "4";
    p.min = 1;
    p.max = 1000000;
    p.description = "local_sgd, post_local_sgd: local steps between two parameter averagings.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kLocalSgdBeginStep;
    p.type = ParamType::kInt;
    p.default_text = "0";
    p.min = 0;
    p.max = 4294967295;
    p.description =
        "post_local_sgd (required, >= 1), adaptive_local_sgd: first local step; earlier steps "
        "average gradients (synchronous SGD).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAdaptiveInitK;
    p.type = ParamType::kInt;
    p.default_text = "4";
    p.min = 1;
    p.max = 1000000;
    p.description = "adaptive_local_sgd: k_0, the first period (local steps between averagings).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAdaptiveMaxK;
    p.type = ParamType::kInt;
    p.default_text = "16";
    p.min = 1;
    p.max = 1000000;
    p.description = "adaptive_local_sgd: k_max, the longest period.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kLocalSgdAverageState;
    p.type = ParamType::kBool;
    p.default_text = "0";
    p.description =
        "Local SGD policies: also average the inner optimizer's state (momentum, Adam moments) "
        "at every averaging point; 0 keeps it local.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmp;
    p.type = ParamType::kBool;
    p.default_text = "0";
    p.description =
        "Mixed precision: ops on GRADWIRE_AMP_ALLOW's list run in fp16 over fp32 master weights, "
        "the loss is scaled, and steps whose gradients overflow are skipped on every rank.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpAllow;
    p.type = ParamType::kString;
    p.allow_empty = true;
    p.default_text = "";
    p.description =
        "AMP: comma list of ops moved to the allow list (always fp16); defaults: linear, "
        "conv2d.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpDeny;
    p.type = ParamType::kString;
    p.allow_empty = true;
    p.default_text = "";
    p.description =
        "AMP: comma list of ops moved to the deny list (always fp32); default: "
        "softmax_cross_entropy. The others (relu, max_pool2d, flatten) follow their inputs.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpInitScale;
    p.type = ParamType::kFloat;
    p.default_text = "32768";
    p.min = 0;
    p.max = 3.0e38;
    p.description = "AMP: the loss scale at the first step (> 0).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpGrowthInterval;
    p.type = ParamType::kInt;
    p.default_text = "1000";
    p.min = 1;
    p.max = 1000000000;
    p.description = "AMP: clean steps in a row after which the dynamic loss scale grows.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpGrowthFactor;
    p.type = ParamType::kFloat;
    p.default_text = "2";
    p.min = 1;
    p.max = 65536;
    p.description = "AMP: what the dynamic loss scale is multiplied by when it grows (> 1).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpBackoffFactor;
    p.type = ParamType::kFloat;
    p.default_text = "0.5";
    p.min = 0;
    p.max = 1;
    p.description = "AMP: what the dynamic loss scale is multiplied by after an overflow (0..1).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpMinScale;
    p.type = ParamType::kFloat;
    p.default_text = "1";
    p.min = 0;
    p.max = 3.0e38;
    p.description =
        "AMP: the floor of the dynamic loss scale, so a run that keeps overflowing for other "
        "reasons cannot drive it to zero (> 0).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpDynamic;
    p.type = ParamType::kBool;
    p.default_text = "1";
    p.description =
        "AMP: 1 adapts the loss scale (back off on overflow, grow after clean steps); 0 keeps "
        "GRADWIRE_AMP_INIT_SCALE (overflowing steps are still skipped).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kAmpCommFp16;
    p.type = ParamType::kBool;
    p.default_text = "1";
    p.description =
        "AMP: exchange dense gradients in fp16 (half the bytes of fp32); topk and dgc messages "
        "keep fp32 values.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kFusionThresholdMb;
    p.type = ParamType::kFloat;
    p.default_text = "4";
    p.min = 0;
    p.max = 65536;
    p.description =
        "Tensor fusion: the most MiB of gradients in one bucket, filled in reverse registration "
        "order (a larger tensor gets a bucket of its own); 0: one bucket per tensor.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kTimeline;
    p.type = ParamType::kString;
    p.default_text = "";
    p.allow_empty = true;
    p.rank_local = true;
    p.description =
        "Write a Chrome trace (Perfetto, chrome://tracing) of every step and bucket phase, one "
        "file per rank: trace.json gives trace.rank0.json, ...; {rank} in the path is replaced "
        "instead; empty: off.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kGradientReduction;
    p.type = ParamType::kEnum;
    p.choices = {"average", "sum"};
    p.default_text = "average";
    p.description =
        "average divides the summed gradients by the world size before the inner "
        "optimizer runs; sum leaves that to you (scale the learning rate).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kBroadcastParameters;
    p.type = ParamType::kBool;
    p.default_text = "1";
    p.description =
        "Copy rank 0's initial parameters to every rank when the "
        "DistributedOptimizer is created.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kLogLevel;
    p.type = ParamType::kEnum;
    p.choices = {"error", "warn", "info", "debug"};
    p.default_text = "info";
    p.rank_local = true;
    p.description = "How much gradwire prints to stderr (may differ across ranks).";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kMpiWait;
    p.type = ParamType::kEnum;
    p.choices = {"auto", "block", "yield"};
    p.default_text = "auto";
    p.description =
        "How a rank waits for an MPI collective: block (MPI's blocking collectives), yield "
        "(non-blocking ones, polled, giving the core up between polls), auto (yield when a node "
        "has more ranks than cores and the MPI is not Open MPI, which yields by itself).";
    r.add(p);
  }
  return r;
}

}  // namespace

const Registry& registry() {
  static const Registry instance = make_registry();
  return instance;
}

}  // namespace gw::config
