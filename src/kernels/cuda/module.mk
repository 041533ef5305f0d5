# module.mk for src/kernels/cuda: without CUDA=1 only the "absent" backend is built.
CUDA ?= 0
ifneq ($(CUDA),1)
LIB_SRC += src/kernels/cuda/cuda_none.c
endif
