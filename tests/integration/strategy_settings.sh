# strategy_settings.sh, sourced by the checkpoint tests (resume.sh, fault_matrix.sh):
# `strategy_settings NAME` sets `vars` (GRADWIRE_* settings, for env) and `extra` (gradwire_train's
# optimizer options) for each strategy that a checkpoint must carry across a resume; returns 1 for
# a name it does not know. Short runs of mlp-small: the settings make each strategy's state change
# within the first 40 steps.
strategy_settings() {
  local dgc=(GRADWIRE_COMPRESSOR=dgc GRADWIRE_DGC_SPARSITY=0.75,0.9375,0.984375,0.996,0.999
             GRADWIRE_DGC_RAMPUP_STEPS=30)
  vars=(); extra=(--lr 0.05 --momentum 0.9)
  case $1 in
    dense) ;;
    fp16) vars=(GRADWIRE_COMPRESSOR=fp16) ;;
    # The warm-up's sparsity steps up every 6 steps until step 30.
    dgc) vars=("${dgc[@]}") ;;
    # Two levels: groups of 2 ranks (one group at 2 ranks), dgc across them.
    dgc_hier) vars=("${dgc[@]}" GRADWIRE_HIERARCHICAL=1 GRADWIRE_HIERARCHY_LOCAL_SIZE=2) ;;
    powersgd) vars=(GRADWIRE_COMPRESSOR=powersgd) ;;
    topk_adam) vars=(GRADWIRE_COMPRESSOR=topk GRADWIRE_DGC_SPARSITY=0.99)
               extra=(--optimizer adam --lr 0.001) ;;
    local_sgd) vars=(GRADWIRE_SYNC=local_sgd GRADWIRE_LOCAL_SGD_K=3) ;;
    post_local_sgd) vars=(GRADWIRE_SYNC=post_local_sgd GRADWIRE_LOCAL_SGD_BEGIN_STEP=12
                          GRADWIRE_LOCAL_SGD_K=4) ;;
    adaptive_local_sgd) vars=(GRADWIRE_SYNC=adaptive_local_sgd GRADWIRE_ADAPTIVE_INIT_K=4
                              GRADWIRE_ADAPTIVE_MAX_K=8) ;;
    # DiLoCo under Adam, top-k pseudo-gradients with error feedback: outer momentum, residuals and
    # the anchor all change at every outer step (every 5 steps).
    diloco) vars=(GRADWIRE_SYNC=diloco GRADWIRE_LOCAL_SGD_K=5 GRADWIRE_COMPRESSOR=topk
                  GRADWIRE_DGC_SPARSITY=0.9)
            extra=(--optimizer adam --lr 0.001) ;;
    # Streaming DiLoCo (Note [Streaming DiLoCo]): two fragments of H = 8 (outer steps after steps
    # 7 + 8j and 11 + 8j), each applied 2 steps after its exchange, 2-bit top-k pseudo-gradients.
    streaming_diloco) vars=(GRADWIRE_SYNC=diloco GRADWIRE_LOCAL_SGD_K=8 GRADWIRE_COMPRESSOR=topk
                            GRADWIRE_DGC_SPARSITY=0.9 GRADWIRE_SPARSE_WIRE=compact2
                            GRADWIRE_DILOCO_FRAGMENTS=2 GRADWIRE_DILOCO_DELAY=2) ;;
    # Overflows back the scale off from 1e9 at the start, and growth after every 4 clean steps
    # raises it again.
    amp) vars=(GRADWIRE_AMP=1 GRADWIRE_AMP_INIT_SCALE=1e9 GRADWIRE_AMP_GROWTH_INTERVAL=4) ;;
    # Two backward passes a step, under dgc (whose state moves once a step, not a pass).
    accumulation) vars=("${dgc[@]}" GRADWIRE_ACCUMULATION_STEPS=2) ;;
    *) return 1 ;;
  esac
}
