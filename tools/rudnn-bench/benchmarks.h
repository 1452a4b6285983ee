#pragma once
// The rudnn-bench subcommands; each takes main's argc/argv (argv[1] is the subcommand's name),
// prints its CSV to stdout and returns the exit code.
namespace rudnn::bench {

int run_norm(int argc, char** argv);            // bench_norm.cpp
int run_moe(int argc, char** argv);             // bench_moe.cpp
int run_gated_delta(int argc, char** argv);     // bench_gated_delta.cpp
int run_attention(int argc, char** argv);       // bench_attention.cpp
int run_conv(int argc, char** argv);            // bench_conv.cpp
int run_paged(int argc, char** argv);           // bench_paged.cpp
int run_moe_backward(int argc, char** argv);    // bench_moe_backward.cpp
int run_paged_backward(int argc, char** argv);  // bench_paged_backward.cpp

}  // namespace rudnn::bench
