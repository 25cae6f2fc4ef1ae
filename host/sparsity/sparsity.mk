# host/sparsity/sparsity.mk - build rules of the mask algorithms.
#
# The per-step passes over the masks (masking gradients, counting nonzeros) must vectorize:
# at high sparsity they are a visible part of a step on the native engine.
$(BUILD)/obj/host/sparsity/masks.o $(BUILD)/obj/host/sparsity/sparsity.o: CFLAGS += -O3
$(BUILD)/obj/host/sparsity/masks.o $(BUILD)/obj/host/sparsity/sparsity.o: host/sparsity/sparsity.mk
