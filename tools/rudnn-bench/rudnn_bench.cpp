// rudnn-bench: device throughput of rudnn ops, for the GPU check and quick comparisons. One
// subcommand per op family (bench_<family>.cpp), each printing CSV lines to stdout.
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_common.h"
#include "benchmarks.h"

namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench <benchmark> [options]

benchmarks (warm plans; median of runs, each run = --iters calls between two queue synchronizations):
  norm          layer_norm, rms_norm, softmax_last_axis    CSV: op,shape,dtype,device,median_us,gb_per_s
  moe           MoE route, dispatch, experts (Scalar, TensorCore), combine, forward
                CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops
  moe-backward  MoE backward: router, combine (Serial, Plane), experts (Scalar, TensorCore), dispatch, the whole
                step; each row checked
                CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops,overhead_pct,
                     max_err,check
  gated-delta   chunk_gated_delta_rule prefill and gated_delta_rule decode
                CSV: mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s
  attention     attention per strategy (flash_mma, flash_unit, fallback, autotune)
                CSV: strategy,batch,q_heads,kv_heads,seq,head_dim,causal,dtype,device,median_us,tflops
  conv          convolution forward, data and weight backward over ResNet-50, UNet, depthwise, video layers
                CSV: set,layer,direction,n,d,h,w,c,o,k,stride,groups,dtype,strategy,algorithm,device,median_us,
                     tflops,gb_per_s
  paged         paged attention decode (unsplit, split-KV), mixed prefill + decode, MLA decode, each row checked
                CSV: set,batch,seq_len,prefill_seqs,prefill_len,page_size,q_heads,kv_heads,head_dim,value_dim,
                     rope_dim,splits,rows,dtype,device,median_us,tflops,gb_per_s,copy_gb_per_s,pct_copy,merge_pct,
                     max_err,check
  paged-backward  paged attention backward (the atomic path): prefill and decode rows, each row checked
                CSV: set,batch,seq_len,page_size,q_heads,kv_heads,head_dim,rows,dtype,path,device,median_us,tflops,
                     max_err,check

`rudnn-bench <benchmark> --help` lists a benchmark's options.

example:
  rudnn-bench norm --device cuda:0 --shape 16384x4096 --dtype bf16 --iters 50
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace rudnn::bench;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  const std::string what = argv[1];
  if (what == "norm") return run_norm(argc, argv);
  if (what == "moe") return run_moe(argc, argv);
  if (what == "gated-delta") return run_gated_delta(argc, argv);
  if (what == "attention") return run_attention(argc, argv);
  if (what == "conv") return run_conv(argc, argv);
  if (what == "paged") return run_paged(argc, argv);
  if (what == "moe-backward") return run_moe_backward(argc, argv);
  if (what == "paged-backward") return run_paged_backward(argc, argv);
  return fail("unknown benchmark " + what +
              " (norm, moe, moe-backward, gated-delta, attention, conv, paged, paged-backward)");
}
