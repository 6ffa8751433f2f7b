#![doc = include_str!("../README.md")]
//!
//! Layers: [`sys`] declares the C API as it is; the rest of the crate is safe:
//! [`Context`], [`TensorDesc`], one builder per op ([`Softmax`], [`Transpose`],
//! [`Norm`], [`Reduce`], [`BiasAct`], [`Prelu`], [`WeightedSum`], [`Gemm`],
//! [`Attention`]) creating an [`Op`], and [`Op::execute`] over slices.
pub mod sys;

mod ops;
pub use ops::*;

use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr::{self, NonNull};

/// A failed tops call: the C status and the library's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl Error {
    /// The status' C name, e.g. "TOPS_ERROR_BAD_SHAPE".
    pub fn status_name(&self) -> String {
        cstr(unsafe { sys::tops_status_string(self.status) })
    }

    fn new(status: i32, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Turns a status into a Result, reading tops_last_error() on this thread.
fn check(status: sys::tops_status_t) -> Result<()> {
    if status == sys::TOPS_SUCCESS {
        Ok(())
    } else {
        Err(Error::new(status, cstr(unsafe { sys::tops_last_error() })))
    }
}

/// The library's version string.
pub fn version() -> String {
    cstr(unsafe { sys::tops_version() })
}

/// The instruction set the CPU kernels use ("sse4", "avx2", "avx512").
pub fn cpu_isa() -> String {
    cstr(unsafe { sys::tops_cpu_isa() })
}

/// Element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum DType {
    F32 = sys::TOPS_DTYPE_F32,
    F16 = sys::TOPS_DTYPE_F16,
    BF16 = sys::TOPS_DTYPE_BF16,
    I32 = sys::TOPS_DTYPE_I32,
    I8 = sys::TOPS_DTYPE_I8,
    U8 = sys::TOPS_DTYPE_U8,
}

/// Execution backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Backend {
    Default = sys::TOPS_BACKEND_DEFAULT,
    Cpu = sys::TOPS_BACKEND_CPU,
    Cuda = sys::TOPS_BACKEND_CUDA,
}

/// Whether `backend` can be used in this process, and if not, why.
pub fn backend_available(backend: Backend) -> (bool, String) {
    let mut why: *const c_char = ptr::null();
    let ok = unsafe { sys::tops_backend_available(backend as i32, &mut why) };
    (ok != 0, cstr(why))
}

/// A backend + device + stream + thread count. Used by one thread at a time
/// (it is `Send`, not `Sync`); destroyed on drop.
#[derive(Debug)]
pub struct Context {
    raw: NonNull<sys::tops_context_s>,
}

// A context may move between threads; the C API forbids concurrent use, which `!Sync` and `&mut` enforce.
unsafe impl Send for Context {}

impl Context {
    /// A context on `backend` (device: CUDA ordinal).
    pub fn new(backend: Backend, device: i32) -> Result<Context> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::tops_context_create(backend as i32, device, &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Context { raw })
            .ok_or_else(|| Error::new(sys::TOPS_ERROR_INTERNAL, "tops_context_create returned NULL"))
    }

    /// A CPU context.
    pub fn cpu() -> Result<Context> {
        Context::new(Backend::Cpu, 0)
    }

    /// Threads for CPU kernels (0 = OpenMP default).
    pub fn set_num_threads(&mut self, n: i32) -> Result<()> {
        check(unsafe { sys::tops_context_set_num_threads(self.raw.as_ptr(), n) })
    }

    /// Sets the CUDA stream for later executes.
    ///
    /// # Safety
    /// `stream` must be a valid cudaStream_t of the context's device (or null) while ops run on it.
    pub unsafe fn set_stream(&mut self, stream: *mut c_void) -> Result<()> {
        check(sys::tops_context_set_stream(self.raw.as_ptr(), stream))
    }

    /// The raw handle, for calls into [`sys`].
    pub fn as_raw(&self) -> sys::tops_context_t {
        self.raw.as_ptr()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe { sys::tops_context_destroy(self.raw.as_ptr()) };
    }
}

/// A strided tensor description: dtype, dims, element strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    raw: sys::tops_tensor_desc_t,
}

impl TensorDesc {
    /// A dense row-major tensor.
    pub fn new(dtype: DType, dims: &[i64]) -> Result<TensorDesc> {
        TensorDesc::builder(dtype).dims(dims).build()
    }

    /// Starts a builder: `.dims(..)`, optional `.strides(..)`, `.build()`.
    pub fn builder(dtype: DType) -> TensorDescBuilder {
        TensorDescBuilder { dtype, dims: vec![], strides: None }
    }

    pub fn dtype(&self) -> i32 {
        self.raw.dtype
    }

    pub fn dims(&self) -> &[i64] {
        &self.raw.dims[..self.raw.rank as usize]
    }

    pub fn strides(&self) -> &[i64] {
        &self.raw.strides[..self.raw.rank as usize]
    }

    /// Elements a buffer must hold: 1 + the largest offset (0 when empty).
    pub fn extent(&self) -> usize {
        if self.dims().contains(&0) {
            return 0;
        }
        1 + self.dims().iter().zip(self.strides()).map(|(d, s)| ((d - 1) * s) as usize).sum::<usize>()
    }

    pub fn as_raw(&self) -> sys::tops_tensor_desc_t {
        self.raw
    }
}

/// Builder of a [`TensorDesc`].
#[derive(Clone, Debug)]
pub struct TensorDescBuilder {
    dtype: DType,
    dims: Vec<i64>,
    strides: Option<Vec<i64>>,
}

impl TensorDescBuilder {
    pub fn dims(mut self, dims: &[i64]) -> Self {
        self.dims = dims.to_vec();
        self
    }

    /// Element strides (default: dense row-major).
    pub fn strides(mut self, strides: &[i64]) -> Self {
        self.strides = Some(strides.to_vec());
        self
    }

    /// Validates through tops_tensor_desc_init.
    pub fn build(self) -> Result<TensorDesc> {
        let rank = self.dims.len();
        if rank > sys::TOPS_MAX_RANK {
            return Err(Error::new(sys::TOPS_ERROR_BAD_RANK, format!("rank {rank} exceeds {}", sys::TOPS_MAX_RANK)));
        }
        if let Some(s) = &self.strides {
            if s.len() != rank {
                return Err(Error::new(sys::TOPS_ERROR_BAD_RANK, format!("{} strides for {rank} dims", s.len())));
            }
        }
        let mut raw = sys::tops_tensor_desc_t::default();
        let strides = self.strides.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        check(unsafe {
            sys::tops_tensor_desc_init(&mut raw, self.dtype as i32, rank as i32, self.dims.as_ptr(), strides)
        })?;
        Ok(TensorDesc { raw })
    }
}

/// Execute argument tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgKind(pub i32);

impl ArgKind {
    pub const X: ArgKind = ArgKind(sys::TOPS_ARG_X);
    pub const Y: ArgKind = ArgKind(sys::TOPS_ARG_Y);
    pub const MASK: ArgKind = ArgKind(sys::TOPS_ARG_MASK);
    pub const LENGTHS: ArgKind = ArgKind(sys::TOPS_ARG_LENGTHS);
    pub const GAMMA: ArgKind = ArgKind(sys::TOPS_ARG_GAMMA);
    pub const BETA: ArgKind = ArgKind(sys::TOPS_ARG_BETA);
    pub const BIAS: ArgKind = ArgKind(sys::TOPS_ARG_BIAS);
    pub const RESIDUAL: ArgKind = ArgKind(sys::TOPS_ARG_RESIDUAL);
    pub const PRENORM: ArgKind = ArgKind(sys::TOPS_ARG_PRENORM);
    pub const MEAN: ArgKind = ArgKind(sys::TOPS_ARG_MEAN);
    pub const RSTD: ArgKind = ArgKind(sys::TOPS_ARG_RSTD);
    pub const SLOPE: ArgKind = ArgKind(sys::TOPS_ARG_SLOPE);
    pub const A: ArgKind = ArgKind(sys::TOPS_ARG_A);
    pub const B: ArgKind = ArgKind(sys::TOPS_ARG_B);
    pub const C: ArgKind = ArgKind(sys::TOPS_ARG_C);
    pub const D: ArgKind = ArgKind(sys::TOPS_ARG_D);
    pub const Q: ArgKind = ArgKind(sys::TOPS_ARG_Q);
    pub const K: ArgKind = ArgKind(sys::TOPS_ARG_K);
    pub const V: ArgKind = ArgKind(sys::TOPS_ARG_V);
    pub const O: ArgKind = ArgKind(sys::TOPS_ARG_O);
    pub const LSE: ArgKind = ArgKind(sys::TOPS_ARG_LSE);
    pub const SEQLENS_K: ArgKind = ArgKind(sys::TOPS_ARG_SEQLENS_K);
    pub const CU_SEQLENS_Q: ArgKind = ArgKind(sys::TOPS_ARG_CU_SEQLENS_Q);
    pub const CU_SEQLENS_K: ArgKind = ArgKind(sys::TOPS_ARG_CU_SEQLENS_K);

    /// Weighted-sum input i.
    pub const fn input(i: usize) -> ArgKind {
        ArgKind(sys::TOPS_ARG_INPUT0 + i as i32)
    }
}

/// Host element types and the dtypes they may carry (u16 holds f16 or bf16 bits).
pub trait Element: Copy {
    const DTYPES: &'static [DType];
}
impl Element for f32 {
    const DTYPES: &'static [DType] = &[DType::F32];
}
impl Element for u16 {
    const DTYPES: &'static [DType] = &[DType::F16, DType::BF16];
}
impl Element for i32 {
    const DTYPES: &'static [DType] = &[DType::I32];
}
impl Element for u8 {
    const DTYPES: &'static [DType] = &[DType::U8];
}
impl Element for i8 {
    const DTYPES: &'static [DType] = &[DType::I8];
}

/// One execute argument over a host slice; outputs borrow mutably.
#[derive(Debug)]
pub struct Arg<'a> {
    kind: ArgKind,
    ptr: *const c_void,
    len: usize,
    dtypes: &'static [DType],
    output: bool,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> Arg<'a> {
    /// An input tensor.
    pub fn input<T: Element>(kind: ArgKind, data: &'a [T]) -> Arg<'a> {
        Arg { kind, ptr: data.as_ptr().cast(), len: data.len(), dtypes: T::DTYPES, output: false, _borrow: PhantomData }
    }

    /// An output tensor (written by the op).
    pub fn output<T: Element>(kind: ArgKind, data: &'a mut [T]) -> Arg<'a> {
        Arg { kind, ptr: data.as_mut_ptr().cast(), len: data.len(), dtypes: T::DTYPES, output: true, _borrow: PhantomData }
    }
}

/// A device-pointer argument (CUDA).
#[derive(Clone, Copy, Debug)]
pub struct DeviceArg {
    pub kind: ArgKind,
    pub ptr: *const c_void,
}

/// A validated op with its kernel; immutable, so `Send + Sync` (each thread
/// executes it with its own [`Context`]). Destroyed on drop.
#[derive(Debug)]
pub struct Op {
    raw: NonNull<sys::tops_op_s>,
    name: &'static str,
    descs: Vec<(ArgKind, TensorDesc, bool)>,
}

// The C API: "An op is immutable after creation: it may be executed concurrently from several threads".
unsafe impl Send for Op {}
unsafe impl Sync for Op {}

impl Op {
    pub(crate) fn create(
        name: &'static str,
        descs: Vec<(ArgKind, TensorDesc, bool)>,
        create: impl FnOnce(*mut sys::tops_op_t) -> sys::tops_status_t,
    ) -> Result<Op> {
        let mut raw = ptr::null_mut();
        check(create(&mut raw))?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(sys::TOPS_ERROR_INTERNAL, "create returned NULL"))?;
        Ok(Op { raw, name, descs })
    }

    /// The kernel the op chose.
    pub fn kernel_name(&self) -> String {
        cstr(unsafe { sys::tops_op_kernel_name(self.raw.as_ptr()) })
    }

    /// Workspace bytes execute needs.
    pub fn workspace_size(&self) -> Result<usize> {
        let mut n = 0usize;
        check(unsafe { sys::tops_op_workspace_size(self.raw.as_ptr(), &mut n) })?;
        Ok(n)
    }

    /// Runs the op on host slices (CPU backend). Each slice's element type and
    /// length are checked against the op's descriptor; the workspace is allocated here.
    pub fn execute(&self, ctx: &mut Context, args: &mut [Arg<'_>]) -> Result<()> {
        for a in args.iter() {
            self.check_arg(a)?;
        }
        let ws_bytes = self.workspace_size()?;
        let mut ws = vec![0u8; ws_bytes];
        let raw: Vec<sys::tops_arg_t> = args.iter().map(|a| sys::tops_arg_t { kind: a.kind.0, ptr: a.ptr }).collect();
        let ws_ptr = if ws_bytes == 0 { ptr::null_mut() } else { ws.as_mut_ptr().cast() };
        check(unsafe { sys::tops_op_execute(ctx.as_raw(), self.raw.as_ptr(), raw.as_ptr(), raw.len(), ws_ptr, ws_bytes) })
    }

    /// Runs the op on device pointers with a device workspace (CUDA backend).
    ///
    /// # Safety
    /// Every pointer must address a tensor of the op's descriptor on the
    /// context's device, live until the work on the context's stream is done;
    /// `workspace` must hold `workspace_bytes` device bytes.
    pub unsafe fn execute_device(&self, ctx: &mut Context, args: &[DeviceArg], workspace: *mut c_void,
                                 workspace_bytes: usize) -> Result<()> {
        let raw: Vec<sys::tops_arg_t> = args.iter().map(|a| sys::tops_arg_t { kind: a.kind.0, ptr: a.ptr }).collect();
        check(sys::tops_op_execute(ctx.as_raw(), self.raw.as_ptr(), raw.as_ptr(), raw.len(), workspace, workspace_bytes))
    }

    fn check_arg(&self, a: &Arg<'_>) -> Result<()> {
        let Some((_, desc, is_output)) = self.descs.iter().find(|(k, _, _)| *k == a.kind) else {
            return Err(Error::new(sys::TOPS_ERROR_UNKNOWN_ARGUMENT,
                                  format!("{}: argument {} is not one of this op's tensors", self.name, a.kind.0)));
        };
        if !a.dtypes.iter().any(|d| *d as i32 == desc.dtype()) {
            return Err(Error::new(sys::TOPS_ERROR_BAD_DTYPE,
                                  format!("{}: argument {} is {} but the slice holds {:?}", self.name, a.kind.0,
                                          cstr(unsafe { sys::tops_dtype_name(desc.dtype()) }), a.dtypes)));
        }
        if *is_output && !a.output {
            return Err(Error::new(sys::TOPS_ERROR_INVALID_ARGUMENT,
                                  format!("{}: argument {} is an output: pass it with Arg::output", self.name, a.kind.0)));
        }
        if a.len < desc.extent() {
            return Err(Error::new(sys::TOPS_ERROR_BAD_SHAPE,
                                  format!("{}: argument {} needs {} elements, the slice has {}", self.name, a.kind.0,
                                          desc.extent(), a.len)));
        }
        Ok(())
    }

    pub fn as_raw(&self) -> sys::tops_op_t {
        self.raw.as_ptr()
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        unsafe { sys::tops_op_destroy(self.raw.as_ptr()) };
    }
}
