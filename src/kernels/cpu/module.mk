# module.mk for src/kernels/cpu: the kernels are built at -O3 (the project's warnings and flags
# otherwise unchanged); the materializing baseline links OpenBLAS.
$(call obj,$(CPU_SRC)): EXTRA_CFLAGS += -O3
EXTRA_LDLIBS += -lopenblas
