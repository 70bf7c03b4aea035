// Every GRADWIRE_* parameter of gradwire, by key. Each is declared once, with its type, default,
// accepted values and description, in params.cc.
#pragma once

#include "plugin/config/registry.h"

namespace gw::config {

// The registry of every gradwire parameter.
const Registry& registry();

namespace keys {
inline constexpr const char* kCompressor = "GRADWIRE_COMPRESSOR";
inline constexpr const char* kDgcSparsity = "GRADWIRE_DGC_SPARSITY";
inline constexpr const char* kDgcRampupBeginStep = "GRADWIRE_DGC_RAMPUP_BEGIN_STEP";
inline constexpr const char* kDgcRampupSteps = "GRADWIRE_DGC_RAMPUP_STEPS";
inline constexpr const char* kDgcSampleRatio = "GRADWIRE_DGC_SAMPLE_RATIO";
inline constexpr const char* kDgcMinNumel = "GRADWIRE_DGC_MIN_NUMEL";
inline constexpr const char* kDgcMomentumMasking = "GRADWIRE_DGC_MOMENTUM_MASKING";
inline constexpr const char* kDgcClipNorm = "GRADWIRE_DGC_CLIP_NORM";
inline constexpr const char* kSync = "GRADWIRE_SYNC";
inline constexpr const char* kLocalSgdK = "GRADWIRE_LOCAL_SGD_K";
inline constexpr const char* kLocalSgdBeginStep = "GRADWIRE_LOCAL_SGD_BEGIN_STEP";
inline constexpr const char* kAdaptiveInitK = "GRADWIRE_ADAPTIVE_INIT_K";
inline constexpr const char* kAdaptiveMaxK = "GRADWIRE_ADAPTIVE_MAX_K";
inline constexpr const char* kLocalSgdAverageState = "GRADWIRE_LOCAL_SGD_AVERAGE_STATE";
inline constexpr const char* kAmp = "GRADWIRE_AMP";
inline constexpr const char* kAmpAllow = "GRADWIRE_AMP_ALLOW";
inline constexpr const char* kAmpDeny = "GRADWIRE_AMP_DENY";
inline constexpr const char* kAmpInitScale = "GRADWIRE_AMP_INIT_SCALE";
inline constexpr const char* kAmpGrowthInterval = "GRADWIRE_AMP_GROWTH_INTERVAL";
inline constexpr const char* kAmpGrowthFactor = "GRADWIRE_AMP_GROWTH_FACTOR";
inline constexpr const char* kAmpBackoffFactor = "GRADWIRE_AMP_BACKOFF_FACTOR";
inline constexpr const char* kAmpMinScale = "GRADWIRE_AMP_MIN_SCALE";
inline constexpr const char* kAmpDynamic = "GRADWIRE_AMP_DYNAMIC";
inline constexpr const char* kAmpCommFp16 = "GRADWIRE_AMP_COMM_FP16";
inline constexpr const char* kFusionThresholdMb = "GRADWIRE_FUSION_THRESHOLD_MB";
inline constexpr const char* kTimeline = "GRADWIRE_TIMELINE";
inline constexpr const char* kGradientReduction = "GRADWIRE_GRADIENT_REDUCTION";
inline constexpr const char* kBroadcastParameters = "GRADWIRE_BROADCAST_PARAMETERS";
inline constexpr const char* kLogLevel = "GRADWIRE_LOG_LEVEL";
inline constexpr const char* kMpiWait = "GRADWIRE_MPI_WAIT";
}  // namespace keys

}  // namespace gw::config
