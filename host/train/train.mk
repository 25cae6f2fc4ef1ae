# host/train/train.mk - build rules of the training loop: `make train`, `make bench` part.
#
# The elementwise kernels of gpt.c must vectorize (GELU's tanh was a third of a step);
# -fno-trapping-math lets GCC if-convert the clamp in gelu_tanhf (results are unchanged).
$(BUILD)/obj/host/train/gpt.o: CFLAGS += -O3 -fno-trapping-math
# -fno-math-errno lets sqrtf vectorize (sqrt is correctly rounded either way).
$(BUILD)/obj/host/train/optim.o: CFLAGS += -O3 -fno-trapping-math -fno-math-errno
$(BUILD)/obj/host/train/gpt.o $(BUILD)/obj/host/train/optim.o: host/train/train.mk
