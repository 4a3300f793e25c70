// ark_loop.cuh, host stand-in for tests/tables_dump.cc: ARK_DEFINE_LOOP() defines a kernel and a
// launch function that are never called, so a generated file's model record links on the host.
#ifndef ARK_LOOP_CUH
#define ARK_LOOP_CUH

#include "ark_model.h"
#include "ark_proto.h"

#define ARK_DEFINE_LOOP()                                                             \
	static void ark_loop_kernel(void) {}                                          \
	static int ark_launch(int gpu, const struct ark_kargs *a, void *stream)       \
	{                                                                             \
		(void)gpu, (void)a, (void)stream;                                     \
		return -1;                                                            \
	}

#endif
