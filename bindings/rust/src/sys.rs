//! Raw declarations of include/tops/tops.h, written by hand in the header's
//! order. tests/header_match.rs compiles a C program against the header and
//! checks every constant, struct size, field offset and function name here.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type tops_status_t = c_int;
pub type tops_dtype_t = c_int;
pub type tops_backend_t = c_int;
pub type tops_arg_kind_t = c_int;
pub type tops_norm_kind_t = c_int;
pub type tops_reduce_op_t = c_int;
pub type tops_activation_t = c_int;
pub type tops_conv_layout_t = c_int;
pub type tops_conv_filter_layout_t = c_int;

macro_rules! constants {
    ($($name:ident: $ty:ty = $value:expr;)*) => {
        $(pub const $name: $ty = $value;)*
        /// Every constant above with its value, for the header-match test.
        pub const ALL_CONSTANTS: &[(&str, i64)] = &[$((stringify!($name), $value as i64)),*];
    };
}

constants! {
    TOPS_VERSION_MAJOR: c_int = 0;
    TOPS_VERSION_MINOR: c_int = 1;
    TOPS_VERSION_PATCH: c_int = 0;
    TOPS_SUCCESS: tops_status_t = 0;
    TOPS_ERROR_INVALID_ARGUMENT: tops_status_t = 0x100;
    TOPS_ERROR_NULL_POINTER: tops_status_t = 0x101;
    TOPS_ERROR_BAD_STRUCT_SIZE: tops_status_t = 0x102;
    TOPS_ERROR_BAD_DTYPE: tops_status_t = 0x103;
    TOPS_ERROR_BAD_RANK: tops_status_t = 0x104;
    TOPS_ERROR_BAD_SHAPE: tops_status_t = 0x105;
    TOPS_ERROR_BAD_STRIDE: tops_status_t = 0x106;
    TOPS_ERROR_BAD_AXIS: tops_status_t = 0x107;
    TOPS_ERROR_MISSING_ARGUMENT: tops_status_t = 0x108;
    TOPS_ERROR_UNKNOWN_ARGUMENT: tops_status_t = 0x109;
    TOPS_ERROR_WORKSPACE_TOO_SMALL: tops_status_t = 0x10a;
    TOPS_ERROR_CONTEXT_MISMATCH: tops_status_t = 0x10b;
    TOPS_ERROR_NOT_SUPPORTED: tops_status_t = 0x200;
    TOPS_ERROR_BACKEND_UNAVAILABLE: tops_status_t = 0x201;
    TOPS_ERROR_OUT_OF_MEMORY: tops_status_t = 0x300;
    TOPS_ERROR_DEVICE: tops_status_t = 0x400;
    TOPS_ERROR_DEVICE_LAUNCH: tops_status_t = 0x401;
    TOPS_ERROR_INTERNAL: tops_status_t = 0x500;
    TOPS_DTYPE_INVALID: tops_dtype_t = 0;
    TOPS_DTYPE_F32: tops_dtype_t = 1;
    TOPS_DTYPE_F16: tops_dtype_t = 2;
    TOPS_DTYPE_BF16: tops_dtype_t = 3;
    TOPS_DTYPE_I32: tops_dtype_t = 4;
    TOPS_DTYPE_I8: tops_dtype_t = 5;
    TOPS_DTYPE_U8: tops_dtype_t = 6;
    TOPS_MAX_RANK: usize = 8;
    TOPS_BACKEND_DEFAULT: tops_backend_t = 0;
    TOPS_BACKEND_CPU: tops_backend_t = 1;
    TOPS_BACKEND_CUDA: tops_backend_t = 2;
    TOPS_ARG_X: tops_arg_kind_t = 1;
    TOPS_ARG_Y: tops_arg_kind_t = 2;
    TOPS_ARG_MASK: tops_arg_kind_t = 3;
    TOPS_ARG_LENGTHS: tops_arg_kind_t = 4;
    TOPS_ARG_GAMMA: tops_arg_kind_t = 5;
    TOPS_ARG_BETA: tops_arg_kind_t = 6;
    TOPS_ARG_BIAS: tops_arg_kind_t = 7;
    TOPS_ARG_RESIDUAL: tops_arg_kind_t = 8;
    TOPS_ARG_PRENORM: tops_arg_kind_t = 9;
    TOPS_ARG_MEAN: tops_arg_kind_t = 10;
    TOPS_ARG_RSTD: tops_arg_kind_t = 11;
    TOPS_ARG_SLOPE: tops_arg_kind_t = 12;
    TOPS_ARG_INPUT0: tops_arg_kind_t = 16;
    TOPS_ARG_A: tops_arg_kind_t = 24;
    TOPS_ARG_B: tops_arg_kind_t = 25;
    TOPS_ARG_C: tops_arg_kind_t = 26;
    TOPS_ARG_D: tops_arg_kind_t = 27;
    TOPS_ARG_Q: tops_arg_kind_t = 28;
    TOPS_ARG_K: tops_arg_kind_t = 29;
    TOPS_ARG_V: tops_arg_kind_t = 30;
    TOPS_ARG_O: tops_arg_kind_t = 31;
    TOPS_ARG_LSE: tops_arg_kind_t = 32;
    TOPS_ARG_SEQLENS_K: tops_arg_kind_t = 33;
    TOPS_ARG_CU_SEQLENS_Q: tops_arg_kind_t = 34;
    TOPS_ARG_CU_SEQLENS_K: tops_arg_kind_t = 35;
    TOPS_ARG_W: tops_arg_kind_t = 36;
    TOPS_ARG_CU_SEQLENS: tops_arg_kind_t = 40;
    TOPS_SOFTMAX_LOG: u32 = 1;
    TOPS_NORM_LAYER: tops_norm_kind_t = 0;
    TOPS_NORM_RMS: tops_norm_kind_t = 1;
    TOPS_REDUCE_SUM: tops_reduce_op_t = 0;
    TOPS_REDUCE_MEAN: tops_reduce_op_t = 1;
    TOPS_REDUCE_MAX: tops_reduce_op_t = 2;
    TOPS_REDUCE_MIN: tops_reduce_op_t = 3;
    TOPS_REDUCE_PROD: tops_reduce_op_t = 4;
    TOPS_REDUCE_SUMSQ: tops_reduce_op_t = 5;
    TOPS_REDUCE_NORM2: tops_reduce_op_t = 6;
    TOPS_ACT_NONE: tops_activation_t = 0;
    TOPS_ACT_RELU: tops_activation_t = 1;
    TOPS_ACT_GELU_ERF: tops_activation_t = 2;
    TOPS_ACT_GELU_TANH: tops_activation_t = 3;
    TOPS_ACT_SILU: tops_activation_t = 4;
    TOPS_MAX_SUM_INPUTS: usize = 8;
    TOPS_GEMM_ALLOW_TF32: u32 = 1;
    TOPS_ATTN_CAUSAL: u32 = 1;
    TOPS_CONV_NCHW: tops_conv_layout_t = 0;
    TOPS_CONV_NHWC: tops_conv_layout_t = 1;
    TOPS_CONV_FILTER_KCRS: tops_conv_filter_layout_t = 0;
    TOPS_CONV_FILTER_KRSC: tops_conv_filter_layout_t = 1;
    TOPS_CONV_ALLOW_TF32: u32 = 1;
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tops_tensor_desc_t {
    pub dtype: tops_dtype_t,
    pub rank: i32,
    pub dims: [i64; TOPS_MAX_RANK],
    pub strides: [i64; TOPS_MAX_RANK],
}

pub enum tops_context_s {}
pub type tops_context_t = *mut tops_context_s;
pub enum tops_op_s {}
pub type tops_op_t = *mut tops_op_s;
pub type tops_log_fn = Option<unsafe extern "C" fn(level: c_int, message: *const c_char, user_data: *mut c_void)>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_arg_t {
    pub kind: tops_arg_kind_t,
    pub ptr: *const c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_softmax_desc_t {
    pub struct_size: u32,
    pub x: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub axis: i32,
    pub scale: f32,
    pub flags: u32,
    pub mask: tops_tensor_desc_t,
    pub lengths: tops_tensor_desc_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_transpose_desc_t {
    pub struct_size: u32,
    pub x: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub perm: [i32; TOPS_MAX_RANK],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_norm_desc_t {
    pub struct_size: u32,
    pub kind: tops_norm_kind_t,
    pub x: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub normalized_rank: i32,
    pub eps: f32,
    pub gamma: tops_tensor_desc_t,
    pub beta: tops_tensor_desc_t,
    pub bias: tops_tensor_desc_t,
    pub residual: tops_tensor_desc_t,
    pub prenorm: tops_tensor_desc_t,
    pub mean: tops_tensor_desc_t,
    pub rstd: tops_tensor_desc_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_reduce_desc_t {
    pub struct_size: u32,
    pub op: tops_reduce_op_t,
    pub x: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub axes: u32,
    pub keepdims: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_bias_act_desc_t {
    pub struct_size: u32,
    pub x: tops_tensor_desc_t,
    pub bias: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub act: tops_activation_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_prelu_desc_t {
    pub struct_size: u32,
    pub x: tops_tensor_desc_t,
    pub slope: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_weighted_sum_desc_t {
    pub struct_size: u32,
    pub num_inputs: i32,
    pub inputs: [tops_tensor_desc_t; TOPS_MAX_SUM_INPUTS],
    pub coefs: [f32; TOPS_MAX_SUM_INPUTS],
    pub y: tops_tensor_desc_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_gemm_desc_t {
    pub struct_size: u32,
    pub a: tops_tensor_desc_t,
    pub b: tops_tensor_desc_t,
    pub c: tops_tensor_desc_t,
    pub d: tops_tensor_desc_t,
    pub bias: tops_tensor_desc_t,
    pub trans_a: i32,
    pub trans_b: i32,
    pub alpha: f32,
    pub beta: f32,
    pub act: tops_activation_t,
    pub flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_attention_desc_t {
    pub struct_size: u32,
    pub q: tops_tensor_desc_t,
    pub k: tops_tensor_desc_t,
    pub v: tops_tensor_desc_t,
    pub o: tops_tensor_desc_t,
    pub lse: tops_tensor_desc_t,
    pub seqlens_k: tops_tensor_desc_t,
    pub cu_seqlens_q: tops_tensor_desc_t,
    pub cu_seqlens_k: tops_tensor_desc_t,
    pub max_seqlen_q: i32,
    pub max_seqlen_k: i32,
    pub scale: f32,
    pub flags: u32,
    pub window_left: i32,
    pub window_right: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_conv2d_desc_t {
    pub struct_size: u32,
    pub layout: tops_conv_layout_t,
    pub filter_layout: tops_conv_filter_layout_t,
    pub x: tops_tensor_desc_t,
    pub w: tops_tensor_desc_t,
    pub bias: tops_tensor_desc_t,
    pub residual: tops_tensor_desc_t,
    pub y: tops_tensor_desc_t,
    pub stride_h: i32,
    pub stride_w: i32,
    pub pad_top: i32,
    pub pad_bottom: i32,
    pub pad_left: i32,
    pub pad_right: i32,
    pub dilation_h: i32,
    pub dilation_w: i32,
    pub groups: i32,
    pub act: tops_activation_t,
    pub flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tops_pad_desc_t {
    pub struct_size: u32,
    pub padded: tops_tensor_desc_t,
    pub packed: tops_tensor_desc_t,
    pub lengths: tops_tensor_desc_t,
    pub cu_seqlens: tops_tensor_desc_t,
}

extern "C" {
    pub fn tops_version() -> *const c_char;
    pub fn tops_version_number() -> c_int;
    pub fn tops_status_string(status: tops_status_t) -> *const c_char;
    pub fn tops_last_error() -> *const c_char;
    pub fn tops_set_log_callback(f: tops_log_fn, user_data: *mut c_void, level: c_int) -> tops_status_t;
    pub fn tops_dtype_size(dtype: tops_dtype_t) -> usize;
    pub fn tops_dtype_name(dtype: tops_dtype_t) -> *const c_char;
    pub fn tops_tensor_desc_init(desc: *mut tops_tensor_desc_t, dtype: tops_dtype_t, rank: i32, dims: *const i64,
                                 strides: *const i64) -> tops_status_t;
    pub fn tops_backend_name(backend: tops_backend_t) -> *const c_char;
    pub fn tops_backend_available(backend: tops_backend_t, reason: *mut *const c_char) -> c_int;
    pub fn tops_cpu_isa() -> *const c_char;
    pub fn tops_context_create(backend: tops_backend_t, device: c_int, ctx: *mut tops_context_t) -> tops_status_t;
    pub fn tops_context_destroy(ctx: tops_context_t) -> tops_status_t;
    pub fn tops_context_get_backend(ctx: tops_context_t, backend: *mut tops_backend_t) -> tops_status_t;
    pub fn tops_context_set_stream(ctx: tops_context_t, stream: *mut c_void) -> tops_status_t;
    pub fn tops_context_set_num_threads(ctx: tops_context_t, num_threads: c_int) -> tops_status_t;
    pub fn tops_op_workspace_size(op: tops_op_t, bytes: *mut usize) -> tops_status_t;
    pub fn tops_op_kernel_name(op: tops_op_t) -> *const c_char;
    pub fn tops_op_execute(ctx: tops_context_t, op: tops_op_t, args: *const tops_arg_t, num_args: usize,
                           workspace: *mut c_void, workspace_bytes: usize) -> tops_status_t;
    pub fn tops_op_destroy(op: tops_op_t) -> tops_status_t;
    pub fn tops_softmax_desc_default() -> tops_softmax_desc_t;
    pub fn tops_softmax_create(ctx: tops_context_t, desc: *const tops_softmax_desc_t, op: *mut tops_op_t)
                               -> tops_status_t;
    pub fn tops_transpose_desc_default() -> tops_transpose_desc_t;
    pub fn tops_transpose_create(ctx: tops_context_t, desc: *const tops_transpose_desc_t, op: *mut tops_op_t)
                                 -> tops_status_t;
    pub fn tops_norm_desc_default() -> tops_norm_desc_t;
    pub fn tops_norm_create(ctx: tops_context_t, desc: *const tops_norm_desc_t, op: *mut tops_op_t) -> tops_status_t;
    pub fn tops_reduce_desc_default() -> tops_reduce_desc_t;
    pub fn tops_reduce_create(ctx: tops_context_t, desc: *const tops_reduce_desc_t, op: *mut tops_op_t)
                              -> tops_status_t;
    pub fn tops_bias_act_desc_default() -> tops_bias_act_desc_t;
    pub fn tops_bias_act_create(ctx: tops_context_t, desc: *const tops_bias_act_desc_t, op: *mut tops_op_t)
                                -> tops_status_t;
    pub fn tops_prelu_desc_default() -> tops_prelu_desc_t;
    pub fn tops_prelu_create(ctx: tops_context_t, desc: *const tops_prelu_desc_t, op: *mut tops_op_t)
                             -> tops_status_t;
    pub fn tops_weighted_sum_desc_default() -> tops_weighted_sum_desc_t;
    pub fn tops_weighted_sum_create(ctx: tops_context_t, desc: *const tops_weighted_sum_desc_t, op: *mut tops_op_t)
                                    -> tops_status_t;
    pub fn tops_gemm_desc_default() -> tops_gemm_desc_t;
    pub fn tops_gemm_create(ctx: tops_context_t, desc: *const tops_gemm_desc_t, op: *mut tops_op_t) -> tops_status_t;
    pub fn tops_attention_desc_default() -> tops_attention_desc_t;
    pub fn tops_attention_create(ctx: tops_context_t, desc: *const tops_attention_desc_t, op: *mut tops_op_t)
                                 -> tops_status_t;
    pub fn tops_conv2d_desc_default() -> tops_conv2d_desc_t;
    pub fn tops_conv2d_output_dims(desc: *const tops_conv2d_desc_t, dims: *mut i64) -> tops_status_t;
    pub fn tops_conv2d_create(ctx: tops_context_t, desc: *const tops_conv2d_desc_t, op: *mut tops_op_t)
                              -> tops_status_t;
    pub fn tops_pad_desc_default() -> tops_pad_desc_t;
    pub fn tops_unpad_create(ctx: tops_context_t, desc: *const tops_pad_desc_t, op: *mut tops_op_t) -> tops_status_t;
    pub fn tops_pad_create(ctx: tops_context_t, desc: *const tops_pad_desc_t, op: *mut tops_op_t) -> tops_status_t;
}

/// (struct, "sizeof" or field, bytes) for every struct above, for the header-match test.
pub fn layouts() -> Vec<(&'static str, &'static str, usize)> {
    macro_rules! layout {
        ($($s:ident { $($f:ident),* })*) => {
            vec![$((stringify!($s), "sizeof", std::mem::size_of::<$s>()),
                   $((stringify!($s), stringify!($f), std::mem::offset_of!($s, $f)),)*)*]
        };
    }
    layout! {
        tops_tensor_desc_t { dtype, rank, dims, strides }
        tops_arg_t { kind, ptr }
        tops_softmax_desc_t { struct_size, x, y, axis, scale, flags, mask, lengths }
        tops_transpose_desc_t { struct_size, x, y, perm }
        tops_norm_desc_t { struct_size, kind, x, y, normalized_rank, eps, gamma, beta, bias, residual, prenorm,
                           mean, rstd }
        tops_reduce_desc_t { struct_size, op, x, y, axes, keepdims }
        tops_bias_act_desc_t { struct_size, x, bias, y, act }
        tops_prelu_desc_t { struct_size, x, slope, y }
        tops_weighted_sum_desc_t { struct_size, num_inputs, inputs, coefs, y }
        tops_gemm_desc_t { struct_size, a, b, c, d, bias, trans_a, trans_b, alpha, beta, act, flags }
        tops_attention_desc_t { struct_size, q, k, v, o, lse, seqlens_k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                max_seqlen_k, scale, flags, window_left, window_right }
        tops_conv2d_desc_t { struct_size, layout, filter_layout, x, w, bias, residual, y, stride_h, stride_w,
                             pad_top, pad_bottom, pad_left, pad_right, dilation_h, dilation_w, groups, act, flags }
        tops_pad_desc_t { struct_size, padded, packed, lengths, cu_seqlens }
    }
}
