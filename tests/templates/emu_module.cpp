// The test executable is its own kernel module: its kernels reach the emulator through the ABI
// table handed to this rudnn_emu_bind.
#include "rudnn/prelude.cuh"

RUDNN_EMU_MODULE();
