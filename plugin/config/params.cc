#include "plugin/config/params.h"

namespace gw::config {
namespace {

Registry make_registry() {
  Registry r;
  {
    ParamSpec p;
    p.key = keys::kCompressor;
    p.type = ParamType::kEnum;
    p.choices = {"none"};
    p.default_text = "none";
    p.description = "How gradients are encoded before the exchange; none sends them as fp32.";
    r.add(p);
  }
  {
    ParamSpec p;
    p.key = keys::kSync;
    p.type = ParamType::kEnum;
    p.choices = {"every_step"};
    p.default_text = "every_step";
    p.description =
        "When ranks exchange; every_step averages gradients at every step "
        "(synchronous SGD).";
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
  return r;
}

}  // namespace

const Registry& registry() {
  static const Registry instance = make_registry();
  return instance;
}

}  // namespace gw::config
