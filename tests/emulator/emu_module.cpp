// The test executable is itself a "kernel module": its kernels reach the emulator through the ABI
// table handed to this rudnn_emu_bind (see emu_test.h).
#include "rudnn/prelude.cuh"

RUDNN_EMU_MODULE();
