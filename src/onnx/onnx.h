/* onnx.h - an ONNX model as a pn network: the rows of one training step
 * (or forward pass) for ONE sample, built into a pn_arch (arch.h) and
 * written by its writer, the one of network.h.
 *
 * The model is read with protobuf-c through src/onnx/onnx-subset.proto
 * (the messages and fields pn needs, with ONNX's field numbers; every other
 * field is skipped).  pn never reads weight values: an initializer's dims
 * and type are all it takes, so a model whose initializers hold no data
 * reads the same.
 *
 * ---- shapes ----------------------------------------------------------------
 * Every tensor a mapped node needs must have a shape in the graph: in
 * graph.input, graph.output, graph.value_info (onnx.shape_inference.
 * infer_shapes at export time writes them; with data_prop=True it also
 * follows Shape, Gather and Concat), an initializer's dims or a Constant
 * node's value.  Symbolic dims (dim_param): a name that is the first dim
 * of a graph input or output is the batch and is 1 (one sample, as every
 * network of pn; pn-sum -b scales it); any other name takes seq (--seq).
 * A fixed first dim above 1 on a graph input is refused (the rows would be
 * a batch, not one sample).  There is no --batch: the batch is pn-sum's.
 *
 * ---- the mapping (map.c's table, the one list of ops) ----------------------
 *   MatMul Gemm      dense when an operand is an initializer (its weights:
 *                    batch = the tokens, the product of the other dims),
 *                    else bmm (batch = the leading dims)
 *   Conv             conv2d (2-D only; square: the height's kernel, image,
 *                    stride and pads[0]); group g: a conv of in/g to out/g
 *                    channels with batch x g (depthwise: 1 to 1, batch =
 *                    channels); dilations ignored
 *   BatchNormalization  batchnorm over the C channels (square, the
 *                    height's image), as pn-net writes it
 *   LayerNormalization  layernorm (dims before axis: batch, seq_len; from
 *                    axis: dim)
 *   Softmax LogSoftmax  softmax (from axis: dim)
 *   MaxPool AveragePool GlobalAveragePool GlobalMaxPool  pool, op max or
 *                    avg (kernel_shape, strides, pads[0]; global: one
 *                    window), as pn-net writes pooling
 *   Add Sub Mul Div Pow  elementwise add sub mul div pow; with a
 *                    one-element operand addu subu mulu divu powu
 *   Relu LeakyRelu Clip Gelu Tanh Sigmoid Exp Neg Erf Sqrt Reciprocal
 *   Dropout          elementwise relu relu relu gelu tanh sigmoid exp neg,
 *                    tanh (Erf: a transcendental of the same cost), powu
 *                    (Sqrt), divu (Reciprocal), dropout (train only)
 *   ReduceMean ReduceSum  elementwise addu over the input
 *   Gather           embedding when its data is a 2-D float initializer
 *                    (vocab x embed_dim, axis 0), else a mem row
 *   LSTM GRU RNN     lstm gru rnn (one layer a node; bidirectional from
 *                    direction)
 *   Transpose Concat Split Slice Expand Tile Pad Cast Where
 *                    mem rows: the elements of the float inputs plus the
 *                    outputs; but a Transpose of a 2-D float initializer
 *                    (torch's tied head exported without constant folding)
 *                    is that weight to the MatMul that reads it: no row
 *   Reshape Flatten Squeeze Unsqueeze Identity Shape Size Constant
 *   ConstantOfShape Range  no row: views or shape arithmetic; an Identity
 *                    of an initializer is a parameter of its own (torch's
 *                    export keeps one initializer for parameters of equal
 *                    values)
 * A mapped node none of whose inputs and outputs is a floating-point tensor
 * is shape arithmetic and makes no row.  Every other op is not mapped: it is
 * counted by name (pn_onnx_unmapped), never dropped silently.
 *
 * Rows are named by the node's name (else op_type and its index); every row
 * takes the options' precision and phase, and the optimizer where its type
 * has weights (pn-net's rules: arch.h).
 *
 * ---- parameters --------------------------------------------------------------
 * A row's parameters are the elements of the float initializers its node
 * reads as weights, each initializer counted once: MatMul/Gemm's weight
 * and bias, Conv's W and B, BatchNormalization's scale and B (not the
 * running statistics), LayerNormalization's scale and B, an embedding's
 * table, the W, R and B of a recurrent node, and a float initializer of
 * more than one element that an elementwise op or a memory pass reads (a
 * bias after MatMul, a learned position table, sliced).  Their sum is
 * torch's model.parameters() count when the model is exported in training
 * mode where it has batch norm (eval mode folds it into the conv), and
 * without constant folding where a parameter is sliced or transposed
 * (folding makes a constant of its own of the slice).
 * A row whose parameters are not its type's weights (an elementwise add of
 * a bias) takes no optimizer: its update is not counted.
 *
 * ---- errors -------------------------------------------------------------------
 * pn_onnx_build returns 0, or -1 with e->msg (no file name) and a left
 * empty; the messages:
 *   not an ONNX model (protobuf parse failed)
 *   reading the model needs more than 109 MiB (16 times its size, plus
 *     64 MiB): a corrupt file?
 *   the model has no graph
 *   no shape for tensor 'x' (node 'n'): run onnx.shape_inference.
 *     infer_shapes when exporting
 *   tensor 'x' has symbolic dim 'seq': give --seq
 *   tensor 'x' has rank 9 (at most 8)
 *   tensor 'x' has a dim of -1 (a dim must be at least 0)
 *   input 'x' has a fixed batch of 8: export at batch 1 or with a symbolic
 *     batch dim
 *   node 'n' (Conv): impossible conv2d: kernel 7 is larger than the padded
 *     image 5           (any row pn's layer contract refuses, or a dim of 0)
 *   no node maps to a row
 * pn_onnx_read adds, before parsing:
 *   the file is larger than 2 GiB, the most protobuf reads
 *   cannot read: <strerror>
 */
#ifndef PN_ONNX_H
#define PN_ONNX_H

#include <stddef.h>

#include "arch.h"

/* 1 when pn was built with protobuf-c (the ONNX reader), else 0: then
 * pn_onnx_build fails with "built without protobuf-c". */
extern const int pn_onnx_available;

/* The largest model file read (protobuf's own limit), and the most memory
 * protobuf-c may take to read n bytes. */
#define PN_ONNX_MAX_BYTES 2147483647L
#define PN_ONNX_MEM(n) (16 * (size_t)(n) + ((size_t)64 << 20))

typedef struct {
	char msg[320];
} pn_onnx_err;

/* The ops no row stands for: one entry per op type, in order of first
 * appearance, with the number of nodes. */
typedef struct {
	struct pn_onnx_op {
		char name[64];
		long count;
	} *op;
	long n, nodes;
} pn_onnx_unmapped;

/* Build a's rows (a empty, a->o set; seq: the value of symbolic dims other
 * than the batch, 0 for none) from the model in data[0..n), and fill u (its
 * op freed by pn_onnx_unmapped_free).  Returns 0 or -1 (see errors). */
int pn_onnx_build(pn_arch *a, const unsigned char *data, size_t n,
		  pn_onnx_unmapped *u, pn_onnx_err *e);

/* Read path ("-": standard input; at most PN_ONNX_MAX_BYTES) and build. */
int pn_onnx_read(pn_arch *a, const char *path, pn_onnx_unmapped *u,
		 pn_onnx_err *e);

/* "3 nodes of 2 op types not mapped: Foo (2), Bar (1)" into buf, most
 * nodes first (ties by name); returns buf. */
char *pn_onnx_unmapped_msg(const pn_onnx_unmapped *u, char *buf, size_t n);
void pn_onnx_unmapped_free(pn_onnx_unmapped *u);

#endif
