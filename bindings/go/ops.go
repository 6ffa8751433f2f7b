package tops

/*
#include <tops/tops.h>
*/
import "C"

import "fmt"

// Activation is a fused activation.
type Activation int

// Activations.
const (
	ActNone     Activation = C.TOPS_ACT_NONE
	ActReLU     Activation = C.TOPS_ACT_RELU
	ActGELUErf  Activation = C.TOPS_ACT_GELU_ERF
	ActGELUTanh Activation = C.TOPS_ACT_GELU_TANH
	ActSiLU     Activation = C.TOPS_ACT_SILU
)

// ReduceOp is a reduction.
type ReduceOp int

// Reductions.
const (
	ReduceSum   ReduceOp = C.TOPS_REDUCE_SUM
	ReduceMean  ReduceOp = C.TOPS_REDUCE_MEAN
	ReduceMax   ReduceOp = C.TOPS_REDUCE_MAX
	ReduceMin   ReduceOp = C.TOPS_REDUCE_MIN
	ReduceProd  ReduceOp = C.TOPS_REDUCE_PROD
	ReduceSumSq ReduceOp = C.TOPS_REDUCE_SUMSQ
	ReduceNorm2 ReduceOp = C.TOPS_REDUCE_NORM2
)

// descs converts tensors to C descriptors, stopping at the first error.
type descs struct {
	m   map[ArgKind]C.tops_tensor_desc_t
	err error
}

func newDescs() *descs { return &descs{m: map[ArgKind]C.tops_tensor_desc_t{}} }

func (d *descs) add(k ArgKind, t Tensor, name string) C.tops_tensor_desc_t {
	if d.err != nil {
		return C.tops_tensor_desc_t{}
	}
	c, err := t.cdesc()
	if err != nil {
		e := err.(*Error)
		d.err = &Error{Status: e.Status, Message: fmt.Sprintf("%s: %s", name, e.Message)}
		return c
	}
	if c.dtype != C.TOPS_DTYPE_INVALID {
		d.m[k] = c
	}
	return c
}

// SoftmaxDesc: Y = softmax(Scale * X) along Axis (log-softmax with Log).
// Mask (u8) and Lengths (i32) are optional (zero Tensor = absent).
type SoftmaxDesc struct {
	X, Y, Mask, Lengths Tensor
	Axis                int
	Scale               float32
	Log                 bool
}

// NewSoftmaxDesc has Axis -1 and Scale 1.
func NewSoftmaxDesc(x, y Tensor) SoftmaxDesc { return SoftmaxDesc{X: x, Y: y, Axis: -1, Scale: 1} }

// NewSoftmax creates a softmax op. Arguments: ArgX, ArgY [, ArgMask, ArgLengths].
func (c *Context) NewSoftmax(s SoftmaxDesc) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_softmax_desc_default()
	ds := newDescs()
	d.x, d.y = ds.add(ArgX, s.X, "x"), ds.add(ArgY, s.Y, "y")
	d.mask, d.lengths = ds.add(ArgMask, s.Mask, "mask"), ds.add(ArgLengths, s.Lengths, "lengths")
	d.axis, d.scale = C.int32_t(s.Axis), C.float(s.Scale)
	if s.Log {
		d.flags = C.TOPS_SOFTMAX_LOG
	}
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("softmax", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_softmax_create(h, &d, op) })
}

// NewTranspose creates y = x.permute(perm). Arguments: ArgX, ArgY.
func (c *Context) NewTranspose(x, y Tensor, perm []int) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	if len(perm) > C.TOPS_MAX_RANK {
		return nil, errorf(ErrBadAxis, "transpose: perm has %d entries", len(perm))
	}
	d := C.tops_transpose_desc_default()
	ds := newDescs()
	d.x, d.y = ds.add(ArgX, x, "x"), ds.add(ArgY, y, "y")
	for i, p := range perm {
		d.perm[i] = C.int32_t(p)
	}
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("transpose", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_transpose_create(h, &d, op) })
}

// NormDesc: LayerNorm (RMS false) or RMSNorm over the last NormalizedRank
// dims of x [+ Bias] [+ Residual]; optional tensors are zero Tensors.
type NormDesc struct {
	RMS                                                    bool
	X, Y, Gamma, Beta, Bias, Residual, Prenorm, Mean, Rstd Tensor
	NormalizedRank                                         int
	Eps                                                    float32
}

// NewNormDesc is a LayerNorm over the last dim with eps 1e-5.
func NewNormDesc(x, y Tensor) NormDesc { return NormDesc{X: x, Y: y, NormalizedRank: 1, Eps: 1e-5} }

// NewNorm creates a LayerNorm/RMSNorm op. Arguments: ArgX, ArgY [, ArgGamma,
// ArgBeta, ArgBias, ArgResidual, ArgPrenorm, ArgMean, ArgRstd].
func (c *Context) NewNorm(s NormDesc) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_norm_desc_default()
	if s.RMS {
		d.kind = C.TOPS_NORM_RMS
	}
	ds := newDescs()
	d.x, d.y = ds.add(ArgX, s.X, "x"), ds.add(ArgY, s.Y, "y")
	d.gamma, d.beta, d.bias = ds.add(ArgGamma, s.Gamma, "gamma"), ds.add(ArgBeta, s.Beta, "beta"), ds.add(ArgBias, s.Bias, "bias")
	d.residual, d.prenorm = ds.add(ArgResidual, s.Residual, "residual"), ds.add(ArgPrenorm, s.Prenorm, "prenorm")
	d.mean, d.rstd = ds.add(ArgMean, s.Mean, "mean"), ds.add(ArgRstd, s.Rstd, "rstd")
	d.normalized_rank, d.eps = C.int32_t(s.NormalizedRank), C.float(s.Eps)
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("norm", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_norm_create(h, &d, op) })
}

// NewReduce creates y = op(x) over axes (dims of x). Arguments: ArgX, ArgY.
func (c *Context) NewReduce(r ReduceOp, x, y Tensor, axes []int, keepdims bool) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_reduce_desc_default()
	ds := newDescs()
	d.x, d.y, d.op = ds.add(ArgX, x, "x"), ds.add(ArgY, y, "y"), C.tops_reduce_op_t(r)
	for _, a := range axes {
		if a < 0 || a >= 32 {
			return nil, errorf(ErrBadAxis, "reduce: axis %d out of range", a)
		}
		d.axes |= 1 << uint(a)
	}
	if keepdims {
		d.keepdims = 1
	}
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("reduce", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_reduce_create(h, &d, op) })
}

// NewBiasAct creates y = act(x + bias); bias may be the zero Tensor. Arguments: ArgX, ArgY [, ArgBias].
func (c *Context) NewBiasAct(x, bias, y Tensor, act Activation) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_bias_act_desc_default()
	ds := newDescs()
	d.x, d.bias, d.y, d.act = ds.add(ArgX, x, "x"), ds.add(ArgBias, bias, "bias"), ds.add(ArgY, y, "y"), C.tops_activation_t(act)
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("bias_act", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_bias_act_create(h, &d, op) })
}

// NewPReLU creates y = x > 0 ? x : slope*x. Arguments: ArgX, ArgY, ArgSlope.
func (c *Context) NewPReLU(x, slope, y Tensor) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_prelu_desc_default()
	ds := newDescs()
	d.x, d.slope, d.y = ds.add(ArgX, x, "x"), ds.add(ArgSlope, slope, "slope"), ds.add(ArgY, y, "y")
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("prelu", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_prelu_create(h, &d, op) })
}

// NewWeightedSum creates y = sum coefs[i]*inputs[i]. Arguments: ArgY, ArgInput0+i.
func (c *Context) NewWeightedSum(inputs []Tensor, coefs []float32, y Tensor) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	if len(inputs) < 1 || len(inputs) > C.TOPS_MAX_SUM_INPUTS || len(coefs) != len(inputs) {
		return nil, errorf(ErrInvalidArgument, "weighted_sum: %d inputs and %d coefs (1..%d, equal counts)",
			len(inputs), len(coefs), C.TOPS_MAX_SUM_INPUTS)
	}
	d := C.tops_weighted_sum_desc_default()
	ds := newDescs()
	d.num_inputs, d.y = C.int32_t(len(inputs)), ds.add(ArgY, y, "y")
	for i, t := range inputs {
		d.inputs[i] = ds.add(ArgInput0+ArgKind(i), t, fmt.Sprintf("inputs[%d]", i))
		d.coefs[i] = C.float(coefs[i])
	}
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("weighted_sum", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_weighted_sum_create(h, &d, op) })
}

// GemmDesc: D = act(Alpha*op(A)@op(B) + Beta*C + Bias); C and Bias optional.
type GemmDesc struct {
	A, B, C, D, Bias Tensor
	TransA, TransB   bool
	Alpha, Beta      float32
	Act              Activation
	AllowTF32        bool
}

// NewGemmDesc has Alpha 1, Beta 0.
func NewGemmDesc(a, b, d Tensor) GemmDesc { return GemmDesc{A: a, B: b, D: d, Alpha: 1} }

// NewGemm creates a GEMM. Arguments: ArgA, ArgB, ArgD [, ArgC, ArgBias].
func (c *Context) NewGemm(g GemmDesc) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_gemm_desc_default()
	ds := newDescs()
	d.a, d.b, d.c, d.d = ds.add(ArgA, g.A, "a"), ds.add(ArgB, g.B, "b"), ds.add(ArgC, g.C, "c"), ds.add(ArgD, g.D, "d")
	d.bias = ds.add(ArgBias, g.Bias, "bias")
	d.trans_a, d.trans_b = cbool(g.TransA), cbool(g.TransB)
	d.alpha, d.beta, d.act = C.float(g.Alpha), C.float(g.Beta), C.tops_activation_t(g.Act)
	if g.AllowTF32 {
		d.flags = C.TOPS_GEMM_ALLOW_TF32
	}
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("gemm", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_gemm_create(h, &d, op) })
}

func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// AttentionDesc: O = softmax(Scale*QK^T + mask)V (FlashAttention-2
// semantics; see tops.h). Optional tensors are zero Tensors; Scale 0 means
// 1/sqrt(head_dim); windows -1 mean unbounded.
type AttentionDesc struct {
	Q, K, V, O, LSE, SeqlensK, CuSeqlensQ, CuSeqlensK Tensor
	MaxSeqlenQ, MaxSeqlenK                            int
	Scale                                             float32
	Causal                                            bool
	WindowLeft, WindowRight                           int
}

// NewAttentionDesc is a non-causal attention with default scale and no window.
func NewAttentionDesc(q, k, v, o Tensor) AttentionDesc {
	return AttentionDesc{Q: q, K: k, V: v, O: o, WindowLeft: -1, WindowRight: -1}
}

// NewAttention creates an attention op. Arguments: ArgQ, ArgK, ArgV, ArgO
// [, ArgLSE, ArgSeqlensK, ArgCuSeqlensQ, ArgCuSeqlensK].
func (c *Context) NewAttention(a AttentionDesc) (*Op, error) {
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	d := C.tops_attention_desc_default()
	ds := newDescs()
	d.q, d.k, d.v, d.o = ds.add(ArgQ, a.Q, "q"), ds.add(ArgK, a.K, "k"), ds.add(ArgV, a.V, "v"), ds.add(ArgO, a.O, "o")
	d.lse, d.seqlens_k = ds.add(ArgLSE, a.LSE, "lse"), ds.add(ArgSeqlensK, a.SeqlensK, "seqlens_k")
	d.cu_seqlens_q = ds.add(ArgCuSeqlensQ, a.CuSeqlensQ, "cu_seqlens_q")
	d.cu_seqlens_k = ds.add(ArgCuSeqlensK, a.CuSeqlensK, "cu_seqlens_k")
	d.max_seqlen_q, d.max_seqlen_k = C.int32_t(a.MaxSeqlenQ), C.int32_t(a.MaxSeqlenK)
	d.scale = C.float(a.Scale)
	if a.Causal {
		d.flags = C.TOPS_ATTN_CAUSAL
	}
	d.window_left, d.window_right = C.int32_t(a.WindowLeft), C.int32_t(a.WindowRight)
	if ds.err != nil {
		return nil, ds.err
	}
	return newOp("attention", ds.m, func(op *C.tops_op_t) C.tops_status_t { return C.tops_attention_create(h, &d, op) })
}
