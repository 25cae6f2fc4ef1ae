/*
 * gpt.h - the GPT-2 style decoder that `cshost train` trains, llm.c-style.
 *
 * Token and learned position embeddings, pre-LayerNorm blocks (causal multi-head attention,
 * GELU-tanh MLP), final LayerNorm, LM head tied to the token embedding. All state is fp32
 * on the host. The four projections of each block (attn.qkv, attn.proj, mlp.fc, mlp.proj)
 * call a pluggable linear-layer hook (gpt_linear_ops) so that they can run on the device
 * (host/train/train_device.c) or as dense OpenBLAS products on the host (the default).
 *
 * Not here: the optimizer (optim.h), data (data.h), masks (train_sparsity.h).
 */
#ifndef CS_TRAIN_GPT_H
#define CS_TRAIN_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_pool.h"

typedef struct gpt_config {
	int n_layer;    /* L */
	int n_head;     /* NH */
	int n_embd;     /* C, divisible by NH */
	int block_size; /* maximum context T */
	int vocab_size; /* V */
} gpt_config;

/* The projections of one block, in data-flow order. */
enum gpt_proj { GPT_QKV = 0, GPT_ATTN_PROJ = 1, GPT_FC = 2, GPT_FC_PROJ = 3, GPT_NPROJ = 4 };

/* One named parameter tensor (names as the sparsity configs match them). */
typedef struct gpt_tensor {
	char name[64];  /* "h.0.attn.qkv.weight" */
	int ndim;
	int shape[2];
	size_t numel;
	size_t offset;  /* into gpt.params / gpt.grads */
	int layer;      /* block index, or -1 */
	int proj;       /* enum gpt_proj for projection weights, else -1 */
} gpt_tensor;

/*
 * Linear-layer hook for the projections: y [BT, OC] = x [BT, IC] W^T (no bias; the model
 * adds it). backward overwrites dx = dy W and accumulates dw += dy^T x into the dense grad
 * buffer (a sparse implementation touches only the nonzero positions, or keeps them in an
 * array of its own: train_native.h). want_dense_dw asks for the full dense dW (sparsity
 * growth steps), always into the dense buffer.
 */
typedef struct gpt_linear_ops {
	int (*forward)(void *ctx, float *y, const float *x, const float *w, int layer, int proj,
		       int BT, int IC, int OC);
	int (*backward)(void *ctx, float *dx, float *dw, const float *dy, const float *x,
			const float *w, int layer, int proj, int BT, int IC, int OC,
			int want_dense_dw);
	/* Optional (NULL: never). The MLP's hidden activations token-minor: mlp.fc's output,
	 * GELU, mlp.proj's input and their gradients in the engine's blocked layout
	 * (ENG_TM_BLOCKED, [nblk][4C][ENG_TB], tokens past BT zero), which spares the
	 * transposes of the widest activations and the products' packing. mlp_ld gives
	 * ld (>= BT) when block `layer` runs so, else 0; then forward_tm / backward_tm run
	 * GPT_FC with x and y / dy token-minor (dx token-major) and GPT_FC_PROJ with x / dx
	 * token-minor (dy and y token-major). x of GPT_FC, [C][ld], is the LayerNorm's output
	 * written so (layernorm_forward_tm_pool). */
	int (*mlp_ld)(void *ctx, int layer, int BT);
	/* The same for attn.qkv's output: q, k, v (and their gradient) as [3C][ld]; then
	 * forward_tm / backward_tm run GPT_QKV as GPT_FC (x, y and dy token-minor), and
	 * attention reads them so (attention_forward_tm_pool). */
	int (*qkv_ld)(void *ctx, int layer, int BT);
	/* attn.proj's input, attention's output, as [C][ld] too, when q, k, v are token-minor
	 * (qkv_ld) and attn_ld gives the same ld; then forward_tm / backward_tm run
	 * GPT_ATTN_PROJ with x token-minor (y, dy and dx token-major). */
	int (*attn_ld)(void *ctx, int layer, int BT);
	/* res (GPT_ATTN_PROJ and GPT_FC_PROJ, whose y is token-major; else NULL): y = res +
	 * (x W^T + bias) [BT, OC], the projection's bias and the residual add in the product's
	 * output pass (bias_residual_pool's expressions: the same bits); res is not y.
	 * bias without res (GPT_QKV): y = x W^T + bias, the bias added in the output pass
	 * (the same bits as a separate pass; padding tokens stay zero). */
	int (*forward_tm)(void *ctx, float *y, const float *res, const float *bias,
			  const float *x, const float *w, int layer, int proj, int BT, int IC,
			  int OC, int ld, int blk);
	/* dx_mul (GPT_FC_PROJ only, else NULL): the token-minor dx comes out multiplied by it
	 * elementwise ([IC][ld], as dx): mlp.proj's backward hands out GELU's backward, the
	 * gradient times the derivative kept in fch, with no pass of its own.
	 * db (GPT_QKV and GPT_FC only, else NULL): the bias gradient, db [OC] += the sum of
	 * each row of the token-minor dy over the BT tokens in bias_grad_tm_pool's order (the
	 * same bits), which the hook may take while its weight gradient reads dy. */
	int (*backward_tm)(void *ctx, float *dx, const float *dx_mul, float *dw, float *db,
			   const float *dy, const float *x, const float *w, int layer, int proj,
			   int BT, int IC, int OC, int ld, int blk, int want_dense_dw);
	/* 1: forward_tm / backward_tm take blk = 1, the blocked residual stream: when every
	 * block runs its four projections token-minor (qkv_ld, attn_ld and mlp_ld give the
	 * same ld), the residual stream, its gradient, the LayerNorm outputs and their
	 * gradients are blocked too ([nblk][C][ENG_TB]); then GPT_QKV and GPT_FC take x and
	 * give dx blocked, GPT_ATTN_PROJ and GPT_FC_PROJ give y (with res blocked) and take
	 * dy blocked, and db is taken for all four (attn.proj's dx token-minor [C][ld],
	 * rows, which attention reads in place). blk = 0: the layouts above. */
	int res_blocked;
} gpt_linear_ops;

/* llm.c layout: each parameter kind is one array over the layers. */
enum {
	P_WTE, P_WPE, P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB, P_LN2W, P_LN2B,
	P_FCW, P_FCB, P_FCPROJW, P_FCPROJB, P_LNFW, P_LNFB, P_NKINDS
};

typedef struct gpt_params {
	float *wte;       /* [V, C] */
	float *wpe;       /* [maxT, C] */
	float *ln1w;      /* [L, C] */
	float *ln1b;      /* [L, C] */
	float *qkvw;      /* [L, 3C, C] */
	float *qkvb;      /* [L, 3C] */
	float *attprojw;  /* [L, C, C] */
	float *attprojb;  /* [L, C] */
	float *ln2w;      /* [L, C] */
	float *ln2b;      /* [L, C] */
	float *fcw;       /* [L, 4C, C] */
	float *fcb;       /* [L, 4C] */
	float *fcprojw;   /* [L, C, 4C] */
	float *fcprojb;   /* [L, C] */
	float *lnfw;      /* [C] */
	float *lnfb;      /* [C] */
} gpt_params;

typedef struct gpt_acts {
	float *encoded;   /* [B, T, C] */
	float *ln1;       /* [L, B, T, C] */
	float *ln1_mean;  /* [L, B, T] */
	float *ln1_rstd;  /* [L, B, T] */
	float *qkv;       /* [L, B, T, 3C] */
	float *atty;      /* [L, B, T, C] */
	float *att;       /* [L, B, NH, T, T] softmax probabilities, zero above the diagonal */
	float *attproj;   /* [L, B, T, C] without its bias (added with the residual) */
	float *residual2; /* [L, B, T, C] */
	float *ln2;       /* [L, B, T, C] */
	float *ln2_mean;  /* [L, B, T] */
	float *ln2_rstd;  /* [L, B, T] */
	float *fch;       /* [L, B, T, 4C] GELU'(fc's output): what the backward reads of it */
	float *fch_gelu;  /* [L, B, T, 4C] */
	float *fcproj;    /* [L, B, T, C] without its bias (added with the residual) */
	float *residual3; /* [L, B, T, C] */
	float *lnf;       /* [B, T, C] */
	float *lnf_mean;  /* [B, T] */
	float *lnf_rstd;  /* [B, T] */
	float *logits;    /* [B, T, V] */
	float *probs;     /* [B, T, V] */
	float *losses;    /* [B, T] */
} gpt_acts;

typedef struct gpt {
	gpt_config cfg;
	/* parameters: one contiguous fp32 buffer, and the same layout for the gradients */
	size_t num_params;
	float *params_memory;
	float *grads_memory;
	gpt_params params, grads;
	int num_tensors;
	gpt_tensor *tensors;
	/* activations for batch B x T (allocated at create; forward may use smaller B, T) */
	int B, T;
	float *acts_memory;
	gpt_acts acts;
	/* backward scratch, one block's worth, reused layer by layer */
	float *bwd_memory;
	float *dresidual;       /* [B, T, C] gradient of the residual stream */
	float *dln;             /* [B, T, C] */
	float *dqkv;            /* [B, T, 3C] */
	float *datty;           /* [B, T, C] */
	float *dfch;            /* [B, T, 4C] */
	float *dfch_gelu;       /* [B, T, 4C] */
	float *dlogits;         /* [B, T, V] */
	float *datt;            /* [T, T] attention scratch */
	float *att_scratch;     /* [att_scratch_threads, attention_scratch_floats]: attention */
	int att_scratch_threads;
	/* token-minor MLP activations (gpt_linear_ops.mlp_ld), allocated at first use */
	int *tm_ld;             /* [3L] ld of each block's last forward (MLP, qkv, atty),
				   0: token-major */
	float *tm_memory;
	size_t tm_cap;          /* floats */
	float *tm_fch;          /* [L][nblk][4C][ENG_TB] fch (GELU'), token-minor blocked */
	float *tm_fch_gelu;     /* [L][nblk][4C][ENG_TB] */
	float *tm_dfch;         /* [nblk][4C][ENG_TB] */
	float *tm_qkv;          /* [L, 3C, ld] */
	float *tm_dqkv;         /* [3C, ld] */
	float *tm_ln1;          /* [L][lnsz] ln1 when q, k, v are token-minor: [C][ld], or
				   blocked with the blocked residual stream (lnsz the larger) */
	float *tm_ln2;          /* [L][lnsz] ln2 when the MLP is token-minor, the same */
	float *tm_atty;         /* [L, C, ld] attention's output when attn_ld */
	/* the blocked residual stream (gpt_linear_ops.res_blocked), [nblk][C][ENG_TB] each */
	int tm_res_on;          /* 1: the last forward ran with it */
	float *tm_res;          /* [L + 1] block l's input (0: the embeddings), then the
				   last block's output */
	float *tm_res2;         /* [L] the residual after attention */
	float *tm_dres;         /* the residual stream's gradient */
	float *tm_dln;          /* a LayerNorm output's gradient */
	float *tm_datt;         /* [C, ld] attention's output's gradient (attn.proj's dx) */
	int *inputs, *targets;  /* [B, T] copies of the last forward's batch */
	int cur_B, cur_T;
	float mean_loss;        /* of the last forward with targets, else -1 */
	/* projections */
	const gpt_linear_ops *lin;
	void *lin_ctx;
	int want_dense_dw;      /* passed through to lin->backward for the next backward */
	/* Called by gpt_backward when gradients are final for this backward: block l's
	 * tensors (layer l, from L-1 down to 0) after its backward, and -1 (wte, wpe, ln_f)
	 * at the end. Data parallelism starts reducing a block while the next one computes.
	 * A nonzero return ends the backward with that error. NULL: none. */
	int (*grads_ready)(void *ctx, int layer);
	void *grads_ready_ctx;
	cs_pool *pool;          /* host threads of the dense layers and of gpt_linear_host
				   (not owned; NULL: one) */
} gpt;

/* Allocate a model for batches up to B x T (T <= block_size). Parameters are zero. */
int gpt_create(gpt *m, const gpt_config *cfg, int B, int T);
void gpt_free(gpt *m);
/* GPT-2 init: N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), LayerNorm 1/0, biases
 * 0. Deterministic in seed. */
void gpt_init_params(gpt *m, uint64_t seed);
/* Index of a tensor by name, or -1. */
int gpt_find_tensor(const gpt *m, const char *name);
/* Check a config's sizes; on error write a message naming the key. */
int gpt_config_check(const gpt_config *cfg, char *err, size_t errlen);

/* Check a batch (B x T tokens within the model's sizes, ids below the vocabulary) and copy
 * it into the model for the passes that follow; CS_ERR_INVALID if it is not valid. */
int gpt_set_batch(gpt *m, const int *inputs, const int *targets, int B, int T);
/* Forward over inputs [B, T] (token ids < V). targets [B, T] may be NULL (logits only);
 * with targets, the mean loss is returned in *loss. */
int gpt_forward(gpt *m, const int *inputs, const int *targets, int B, int T, float *loss);
void gpt_zero_grad(gpt *m);
/* Backward of the last forward (with targets), accumulating into m->grads, scaled so that
 * the gradient is that of (mean loss) * loss_scale (1/grad_accum for accumulation). */
int gpt_backward(gpt *m, float loss_scale);

/* Dense host projection (OpenBLAS sgemm), the default hook. Its ctx is a cs_pool to split
 * the rows over (NULL: one thread); the model passes its own pool. */
extern const gpt_linear_ops gpt_linear_host;

/* ---- layers (outputs, inputs, sizes), also used by the tests ---------------------------- */
void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B,
		     int T, int C);
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B,
		      int T, int C);
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
		       const float *weight, const float *bias, int N, int C);
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			const float *inp, const float *weight, const float *mean,
			const float *rstd, int N, int C);
/* out [N, OC] = inp [N, C] weight^T [C, OC] + bias [OC] (bias may be NULL) */
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
		    int N, int C, int OC);
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
		     const float *inp, const float *weight, int N, int C, int OC);
/* plain-loop reference of matmul_forward/backward (tests compare them) */
void matmul_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
			int N, int C, int OC);
void matmul_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
			 const float *inp, const float *weight, int N, int C, int OC);
/* Floats of scratch per thread that attention takes (the engine's, eng_attention_scratch) */
size_t attention_scratch_floats(int T, int C, int NH);
/* out [B, T, C] from qkv [B, T, 3C]; att [B, NH, T, T] softmax probabilities */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
/* dqkv [B, T, 3C] is overwritten; scratch [attention_scratch_floats] */
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
			float *scratch, int B, int T, int C, int NH);
/* The same with qkv (and dqkv) token-minor: [3C][ld], token b*T + t in column b*T + t
 * (ld >= B*T); scratch [cs_pool_threads(pool), attention_scratch_floats] */
void attention_forward_tm_pool(cs_pool *pool, float *out, float *att, const float *qkvt,
			       int ld, float *scratch, int B, int T, int C, int NH);
/* ... and out token-minor [C][ld] (columns B*T..ld-1 zeroed); the same bits */
void attention_forward_tmo_pool(cs_pool *pool, float *outt, float *att, const float *qkvt,
				int ld, float *scratch, int B, int T, int C, int NH);
void attention_backward_tm_pool(cs_pool *pool, float *dqkvt, const float *dout,
				const float *qkvt, int ld, const float *att, float *scratch,
				int B, int T, int C, int NH);
/* ... and dout token-minor [C][ld] (columns B*T..ld-1 not read); the same bits */
void attention_backward_tmd_pool(cs_pool *pool, float *dqkvt, const float *doutt,
				 const float *qkvt, int ld, const float *att, float *scratch,
				 int B, int T, int C, int NH);
void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C,
			   int NH);
void attention_backward_ref(float *dqkv, const float *dout, const float *qkv,
			    const float *att, int B, int T, int C, int NH);
/* GELU(x) and GELU'(x) as the model's GELU computes them (fast, vectorizable) */
float gelu_of(float x);
float gelu_grad(float x);
void gelu_forward(float *out, const float *inp, int N);
void gelu_backward(float *dinp, const float *inp, const float *dout, int N);
void residual_forward(float *out, const float *inp1, const float *inp2, int N);
void residual_backward(float *dinp1, float *dinp2, const float *dout, int N);
/* probs [N, V] = softmax(logits); losses [N] = -log probs[target] */
void softmax_crossentropy_forward(float *probs, float *losses, const float *logits,
				  const int *targets, int N, int V);
/* dlogits = (probs - onehot(target)) * dloss */
void softmax_crossentropy_backward(float *dlogits, const float *probs, const int *targets,
				   float dloss, int N, int V);

/* ---- threaded layers: the same with the work split over pool (NULL: one thread) ------- */
/* Bit-identical for a fixed thread count; across thread counts too except for the sgemm
 * products (matmul_*), whose row blocks depend on the split. */
void encoder_forward_pool(cs_pool *pool, float *out, const int *inp, const float *wte,
			  const float *wpe, int B, int T, int C);
void encoder_backward_pool(cs_pool *pool, float *dwte, float *dwpe, const float *dout,
			   const int *inp, int B, int T, int C);
void layernorm_forward_pool(cs_pool *pool, float *out, float *mean, float *rstd,
			    const float *inp, const float *weight, const float *bias, int N,
			    int C);
/* The same with out token-minor: [C][ld] (ld >= N), tokens N..ld-1 zeroed; the same bits.
 * 0 or CS_ERR_NO_MEM (its per-thread blocks). */
/* db [rows] += the sum over the BT tokens of each row of the token-minor d [rows][ld]: 16
 * lane-wise sums (lane v the tokens v, v + 16, ... in order), then the lanes in order. */
void bias_grad_tm_pool(cs_pool *pool, float *db, const float *d, int rows, int BT, int ld);
int layernorm_forward_tm_pool(cs_pool *pool, float *out, float *mean, float *rstd,
			      const float *inp, const float *weight, const float *bias, int N,
			      int C, int ld);
void layernorm_backward_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
			     const float *dout, const float *inp, const float *weight,
			     const float *mean, const float *rstd, int N, int C);
/* LayerNorm over the blocked token-minor residual stream: inp, out, dout and dinp
 * [nblk][C][ENG_TB] (engine.h's ENG_TM_BLOCKED), tokens N.. zero. The forward and dinp
 * have the token-major forms' bits; dweight and dbias sum each feature over the tokens in
 * bias_grad_tm_pool's order. */
void layernorm_forward_blk_pool(cs_pool *pool, float *out, float *mean, float *rstd,
				const float *inp, const float *weight, const float *bias, int N,
				int C);
void layernorm_backward_blk_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
				 const float *dout, const float *inp, const float *weight,
				 const float *mean, const float *rstd, int N, int C);
/* dst blocked [nblk][C][ENG_TB] (padding zeroed) = src token-major [N][C], and back */
void tm_block_pool(cs_pool *pool, float *dst, const float *src, int N, int C);
void tm_unblock_pool(cs_pool *pool, float *dst, const float *src, int N, int C);
void matmul_forward_pool(cs_pool *pool, float *out, const float *inp, const float *weight,
			 const float *bias, int N, int C, int OC);
void matmul_backward_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
			  const float *dout, const float *inp, const float *weight, int N, int C,
			  int OC);
/* scratch [cs_pool_threads(pool), attention_scratch_floats] */
void attention_forward_pool(cs_pool *pool, float *out, float *att, const float *qkv,
			    float *scratch, int B, int T, int C, int NH);
void attention_backward_pool(cs_pool *pool, float *dqkv, const float *dout, const float *qkv,
			     const float *att, float *scratch, int B, int T, int C, int NH);
void gelu_forward_pool(cs_pool *pool, float *out, const float *inp, int N);
void gelu_backward_pool(cs_pool *pool, float *dinp, const float *inp, const float *dout,
			int N);
void residual_forward_pool(cs_pool *pool, float *out, const float *inp1, const float *inp2,
			   int N);
void residual_backward_pool(cs_pool *pool, float *dinp1, float *dinp2, const float *dout,
			    int N);
void softmax_crossentropy_forward_pool(cs_pool *pool, float *probs, float *losses,
				       const float *logits, const int *targets, int N, int V);
void softmax_crossentropy_backward_pool(cs_pool *pool, float *dlogits, const float *probs,
					const int *targets, float dloss, int N, int V);

#endif /* CS_TRAIN_GPT_H */
