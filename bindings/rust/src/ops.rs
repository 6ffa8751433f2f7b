//! One builder per op: set the descriptors and options, then `create(&ctx)`.
use crate::{sys, ArgKind, Context, Error, Op, Result, TensorDesc};

/// Fused activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Activation {
    None = sys::TOPS_ACT_NONE,
    Relu = sys::TOPS_ACT_RELU,
    GeluErf = sys::TOPS_ACT_GELU_ERF,
    GeluTanh = sys::TOPS_ACT_GELU_TANH,
    Silu = sys::TOPS_ACT_SILU,
}

/// Reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ReduceOp {
    Sum = sys::TOPS_REDUCE_SUM,
    Mean = sys::TOPS_REDUCE_MEAN,
    Max = sys::TOPS_REDUCE_MAX,
    Min = sys::TOPS_REDUCE_MIN,
    Prod = sys::TOPS_REDUCE_PROD,
    SumSq = sys::TOPS_REDUCE_SUMSQ,
    Norm2 = sys::TOPS_REDUCE_NORM2,
}

/// Descriptor list of an op: (tag, desc, is output).
#[derive(Default)]
struct Args(Vec<(ArgKind, TensorDesc, bool)>);

impl Args {
    fn add(&mut self, kind: ArgKind, t: &TensorDesc, output: bool) -> sys::tops_tensor_desc_t {
        self.0.push((kind, *t, output));
        t.as_raw()
    }

    fn opt(&mut self, kind: ArgKind, t: &Option<TensorDesc>, output: bool) -> sys::tops_tensor_desc_t {
        t.as_ref().map_or_else(Default::default, |t| self.add(kind, t, output))
    }
}

/// y = softmax(scale * x) along axis (log-softmax with `log(true)`).
#[derive(Clone, Debug)]
pub struct Softmax {
    x: TensorDesc,
    y: TensorDesc,
    axis: i32,
    scale: f32,
    log: bool,
    mask: Option<TensorDesc>,
    lengths: Option<TensorDesc>,
}

impl Softmax {
    pub fn new(x: TensorDesc, y: TensorDesc) -> Softmax {
        Softmax { x, y, axis: -1, scale: 1.0, log: false, mask: None, lengths: None }
    }
    pub fn axis(mut self, axis: i32) -> Self {
        self.axis = axis;
        self
    }
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }
    pub fn log(mut self, log: bool) -> Self {
        self.log = log;
        self
    }
    /// u8 mask broadcastable to x (0 = masked out); argument `ArgKind::MASK`.
    pub fn mask(mut self, mask: TensorDesc) -> Self {
        self.mask = Some(mask);
        self
    }
    /// i32 per-row lengths; argument `ArgKind::LENGTHS`.
    pub fn lengths(mut self, lengths: TensorDesc) -> Self {
        self.lengths = Some(lengths);
        self
    }
    /// Arguments: X, Y [, MASK, LENGTHS].
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_softmax_desc_default() };
        d.x = a.add(ArgKind::X, &self.x, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        d.mask = a.opt(ArgKind::MASK, &self.mask, false);
        d.lengths = a.opt(ArgKind::LENGTHS, &self.lengths, false);
        d.axis = self.axis;
        d.scale = self.scale;
        d.flags = if self.log { sys::TOPS_SOFTMAX_LOG } else { 0 };
        Op::create("softmax", a.0, |op| unsafe { sys::tops_softmax_create(ctx.as_raw(), &d, op) })
    }
}

/// y = x permuted: y.dims[k] == x.dims[perm[k]].
#[derive(Clone, Debug)]
pub struct Transpose {
    x: TensorDesc,
    y: TensorDesc,
    perm: Vec<i32>,
}

impl Transpose {
    pub fn new(x: TensorDesc, y: TensorDesc, perm: &[i32]) -> Transpose {
        Transpose { x, y, perm: perm.to_vec() }
    }
    /// Arguments: X, Y.
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        if self.perm.len() > sys::TOPS_MAX_RANK {
            return Err(Error::new(sys::TOPS_ERROR_BAD_AXIS, format!("transpose: perm has {} entries", self.perm.len())));
        }
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_transpose_desc_default() };
        d.x = a.add(ArgKind::X, &self.x, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        d.perm[..self.perm.len()].copy_from_slice(&self.perm);
        Op::create("transpose", a.0, |op| unsafe { sys::tops_transpose_create(ctx.as_raw(), &d, op) })
    }
}

/// LayerNorm / RMSNorm over the last `normalized_rank` dims of x [+ bias] [+ residual].
#[derive(Clone, Debug)]
pub struct Norm {
    rms: bool,
    x: TensorDesc,
    y: TensorDesc,
    normalized_rank: i32,
    eps: f32,
    gamma: Option<TensorDesc>,
    beta: Option<TensorDesc>,
    bias: Option<TensorDesc>,
    residual: Option<TensorDesc>,
    prenorm: Option<TensorDesc>,
    mean: Option<TensorDesc>,
    rstd: Option<TensorDesc>,
}

macro_rules! optional {
    ($($name:ident),*) => {$(
        pub fn $name(mut self, t: TensorDesc) -> Self {
            self.$name = Some(t);
            self
        }
    )*};
}

impl Norm {
    fn new(rms: bool, x: TensorDesc, y: TensorDesc) -> Norm {
        Norm { rms, x, y, normalized_rank: 1, eps: 1e-5, gamma: None, beta: None, bias: None, residual: None,
               prenorm: None, mean: None, rstd: None }
    }
    pub fn layer(x: TensorDesc, y: TensorDesc) -> Norm {
        Norm::new(false, x, y)
    }
    pub fn rms(x: TensorDesc, y: TensorDesc) -> Norm {
        Norm::new(true, x, y)
    }
    pub fn normalized_rank(mut self, r: i32) -> Self {
        self.normalized_rank = r;
        self
    }
    pub fn eps(mut self, eps: f32) -> Self {
        self.eps = eps;
        self
    }
    optional!(gamma, beta, bias, residual, prenorm, mean, rstd);
    /// Arguments: X, Y [, GAMMA, BETA, BIAS, RESIDUAL, PRENORM, MEAN, RSTD].
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_norm_desc_default() };
        d.kind = if self.rms { sys::TOPS_NORM_RMS } else { sys::TOPS_NORM_LAYER };
        d.x = a.add(ArgKind::X, &self.x, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        d.gamma = a.opt(ArgKind::GAMMA, &self.gamma, false);
        d.beta = a.opt(ArgKind::BETA, &self.beta, false);
        d.bias = a.opt(ArgKind::BIAS, &self.bias, false);
        d.residual = a.opt(ArgKind::RESIDUAL, &self.residual, false);
        d.prenorm = a.opt(ArgKind::PRENORM, &self.prenorm, true);
        d.mean = a.opt(ArgKind::MEAN, &self.mean, true);
        d.rstd = a.opt(ArgKind::RSTD, &self.rstd, true);
        d.normalized_rank = self.normalized_rank;
        d.eps = self.eps;
        Op::create("norm", a.0, |op| unsafe { sys::tops_norm_create(ctx.as_raw(), &d, op) })
    }
}

/// y = op(x) over the given dims of x.
#[derive(Clone, Debug)]
pub struct Reduce {
    op: ReduceOp,
    x: TensorDesc,
    y: TensorDesc,
    axes: Vec<usize>,
    keepdims: bool,
}

impl Reduce {
    pub fn new(op: ReduceOp, x: TensorDesc, y: TensorDesc) -> Reduce {
        Reduce { op, x, y, axes: vec![], keepdims: false }
    }
    pub fn axes(mut self, axes: &[usize]) -> Self {
        self.axes = axes.to_vec();
        self
    }
    pub fn keepdims(mut self, k: bool) -> Self {
        self.keepdims = k;
        self
    }
    /// Arguments: X, Y.
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_reduce_desc_default() };
        d.op = self.op as i32;
        d.x = a.add(ArgKind::X, &self.x, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        for &ax in &self.axes {
            if ax >= 32 {
                return Err(Error::new(sys::TOPS_ERROR_BAD_AXIS, format!("reduce: axis {ax} out of range")));
            }
            d.axes |= 1 << ax;
        }
        d.keepdims = self.keepdims as i32;
        Op::create("reduce", a.0, |op| unsafe { sys::tops_reduce_create(ctx.as_raw(), &d, op) })
    }
}

/// y = act(x + bias).
#[derive(Clone, Debug)]
pub struct BiasAct {
    x: TensorDesc,
    y: TensorDesc,
    bias: Option<TensorDesc>,
    act: Activation,
}

impl BiasAct {
    pub fn new(x: TensorDesc, y: TensorDesc, act: Activation) -> BiasAct {
        BiasAct { x, y, bias: None, act }
    }
    optional!(bias);
    /// Arguments: X, Y [, BIAS].
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_bias_act_desc_default() };
        d.x = a.add(ArgKind::X, &self.x, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        d.bias = a.opt(ArgKind::BIAS, &self.bias, false);
        d.act = self.act as i32;
        Op::create("bias_act", a.0, |op| unsafe { sys::tops_bias_act_create(ctx.as_raw(), &d, op) })
    }
}

/// y = x > 0 ? x : slope * x.
#[derive(Clone, Debug)]
pub struct Prelu {
    x: TensorDesc,
    slope: TensorDesc,
    y: TensorDesc,
}

impl Prelu {
    pub fn new(x: TensorDesc, slope: TensorDesc, y: TensorDesc) -> Prelu {
        Prelu { x, slope, y }
    }
    /// Arguments: X, Y, SLOPE.
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_prelu_desc_default() };
        d.x = a.add(ArgKind::X, &self.x, false);
        d.slope = a.add(ArgKind::SLOPE, &self.slope, false);
        d.y = a.add(ArgKind::Y, &self.y, true);
        Op::create("prelu", a.0, |op| unsafe { sys::tops_prelu_create(ctx.as_raw(), &d, op) })
    }
}

/// y = sum_i coef_i * input_i.
#[derive(Clone, Debug)]
pub struct WeightedSum {
    y: TensorDesc,
    inputs: Vec<(TensorDesc, f32)>,
}

impl WeightedSum {
    pub fn new(y: TensorDesc) -> WeightedSum {
        WeightedSum { y, inputs: vec![] }
    }
    /// Adds input i (argument `ArgKind::input(i)`) with its coefficient.
    pub fn input(mut self, t: TensorDesc, coef: f32) -> Self {
        self.inputs.push((t, coef));
        self
    }
    /// Arguments: Y, input(0..n).
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let n = self.inputs.len();
        if n == 0 || n > sys::TOPS_MAX_SUM_INPUTS {
            return Err(Error::new(sys::TOPS_ERROR_INVALID_ARGUMENT,
                                  format!("weighted_sum: {n} inputs (1..{})", sys::TOPS_MAX_SUM_INPUTS)));
        }
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_weighted_sum_desc_default() };
        d.y = a.add(ArgKind::Y, &self.y, true);
        d.num_inputs = n as i32;
        for (i, (t, c)) in self.inputs.iter().enumerate() {
            d.inputs[i] = a.add(ArgKind::input(i), t, false);
            d.coefs[i] = *c;
        }
        Op::create("weighted_sum", a.0, |op| unsafe { sys::tops_weighted_sum_create(ctx.as_raw(), &d, op) })
    }
}

/// D = act(alpha * op(A) @ op(B) + beta * C + bias).
#[derive(Clone, Debug)]
pub struct Gemm {
    a: TensorDesc,
    b: TensorDesc,
    d: TensorDesc,
    c: Option<TensorDesc>,
    bias: Option<TensorDesc>,
    trans_a: bool,
    trans_b: bool,
    alpha: f32,
    beta: f32,
    act: Activation,
    allow_tf32: bool,
}

impl Gemm {
    pub fn new(a: TensorDesc, b: TensorDesc, d: TensorDesc) -> Gemm {
        Gemm { a, b, d, c: None, bias: None, trans_a: false, trans_b: false, alpha: 1.0, beta: 0.0,
               act: Activation::None, allow_tf32: false }
    }
    optional!(c, bias);
    pub fn trans_a(mut self, t: bool) -> Self {
        self.trans_a = t;
        self
    }
    pub fn trans_b(mut self, t: bool) -> Self {
        self.trans_b = t;
        self
    }
    pub fn alpha(mut self, v: f32) -> Self {
        self.alpha = v;
        self
    }
    pub fn beta(mut self, v: f32) -> Self {
        self.beta = v;
        self
    }
    pub fn act(mut self, act: Activation) -> Self {
        self.act = act;
        self
    }
    pub fn allow_tf32(mut self, v: bool) -> Self {
        self.allow_tf32 = v;
        self
    }
    /// Arguments: A, B, D [, C, BIAS].
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut g = unsafe { sys::tops_gemm_desc_default() };
        g.a = a.add(ArgKind::A, &self.a, false);
        g.b = a.add(ArgKind::B, &self.b, false);
        g.d = a.add(ArgKind::D, &self.d, true);
        g.c = a.opt(ArgKind::C, &self.c, false);
        g.bias = a.opt(ArgKind::BIAS, &self.bias, false);
        g.trans_a = self.trans_a as i32;
        g.trans_b = self.trans_b as i32;
        g.alpha = self.alpha;
        g.beta = self.beta;
        g.act = self.act as i32;
        g.flags = if self.allow_tf32 { sys::TOPS_GEMM_ALLOW_TF32 } else { 0 };
        Op::create("gemm", a.0, |op| unsafe { sys::tops_gemm_create(ctx.as_raw(), &g, op) })
    }
}

/// O = softmax(scale * Q K^T + mask) V (see tops.h for layouts).
#[derive(Clone, Debug)]
pub struct Attention {
    q: TensorDesc,
    k: TensorDesc,
    v: TensorDesc,
    o: TensorDesc,
    lse: Option<TensorDesc>,
    seqlens_k: Option<TensorDesc>,
    cu_seqlens_q: Option<TensorDesc>,
    cu_seqlens_k: Option<TensorDesc>,
    max_seqlen_q: i32,
    max_seqlen_k: i32,
    scale: f32,
    causal: bool,
    window: (i32, i32),
}

impl Attention {
    pub fn new(q: TensorDesc, k: TensorDesc, v: TensorDesc, o: TensorDesc) -> Attention {
        Attention { q, k, v, o, lse: None, seqlens_k: None, cu_seqlens_q: None, cu_seqlens_k: None,
                    max_seqlen_q: 0, max_seqlen_k: 0, scale: 0.0, causal: false, window: (-1, -1) }
    }
    optional!(lse, seqlens_k);
    /// Packed sequences: cumulative offsets (i32 [B+1]) and length bounds.
    pub fn varlen(mut self, cu_q: TensorDesc, cu_k: TensorDesc, max_q: i32, max_k: i32) -> Self {
        self.cu_seqlens_q = Some(cu_q);
        self.cu_seqlens_k = Some(cu_k);
        self.max_seqlen_q = max_q;
        self.max_seqlen_k = max_k;
        self
    }
    /// 0 = 1/sqrt(head_dim).
    pub fn scale(mut self, s: f32) -> Self {
        self.scale = s;
        self
    }
    pub fn causal(mut self, c: bool) -> Self {
        self.causal = c;
        self
    }
    /// Sliding window (-1 = unbounded).
    pub fn window(mut self, left: i32, right: i32) -> Self {
        self.window = (left, right);
        self
    }
    /// Arguments: Q, K, V, O [, LSE, SEQLENS_K, CU_SEQLENS_Q, CU_SEQLENS_K].
    pub fn create(&self, ctx: &Context) -> Result<Op> {
        let mut a = Args::default();
        let mut d = unsafe { sys::tops_attention_desc_default() };
        d.q = a.add(ArgKind::Q, &self.q, false);
        d.k = a.add(ArgKind::K, &self.k, false);
        d.v = a.add(ArgKind::V, &self.v, false);
        d.o = a.add(ArgKind::O, &self.o, true);
        d.lse = a.opt(ArgKind::LSE, &self.lse, true);
        d.seqlens_k = a.opt(ArgKind::SEQLENS_K, &self.seqlens_k, false);
        d.cu_seqlens_q = a.opt(ArgKind::CU_SEQLENS_Q, &self.cu_seqlens_q, false);
        d.cu_seqlens_k = a.opt(ArgKind::CU_SEQLENS_K, &self.cu_seqlens_k, false);
        d.max_seqlen_q = self.max_seqlen_q;
        d.max_seqlen_k = self.max_seqlen_k;
        d.scale = self.scale;
        d.flags = if self.causal { sys::TOPS_ATTN_CAUSAL } else { 0 };
        d.window_left = self.window.0;
        d.window_right = self.window.1;
        Op::create("attention", a.0, |op| unsafe { sys::tops_attention_create(ctx.as_raw(), &d, op) })
    }
}
