// Package tops runs tops tensor ops (softmax, transpose, norms, reduce,
// fused elementwise ops, GEMM, attention) through the library's C API.
//
// Life cycle: NewContext -> ctx.NewSoftmax(desc) (validates, picks a kernel) ->
// op.Execute(ctx, args...) any number of times -> op.Close, ctx.Close.
// CPU tensors are Go slices ([]float32 for f32, []uint16 for f16/bf16 bits,
// []int32, []uint8); Execute checks each slice's type and length against the
// op's descriptor. CUDA tensors are device pointers (DeviceArg, unsafe).
//
// A Context must not be used by two goroutines at once; an Op is immutable
// and may be executed concurrently, each goroutine with its own Context.
// Finalizers release forgotten handles, but call Close.
package tops

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -ltops
#include <stdlib.h>
#include <tops/tops.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Status is a tops_status_t code.
type Status int

// Status codes of the C API (the high byte is the category).
const (
	Success               Status = C.TOPS_SUCCESS
	ErrInvalidArgument    Status = C.TOPS_ERROR_INVALID_ARGUMENT
	ErrNullPointer        Status = C.TOPS_ERROR_NULL_POINTER
	ErrBadStructSize      Status = C.TOPS_ERROR_BAD_STRUCT_SIZE
	ErrBadDType           Status = C.TOPS_ERROR_BAD_DTYPE
	ErrBadRank            Status = C.TOPS_ERROR_BAD_RANK
	ErrBadShape           Status = C.TOPS_ERROR_BAD_SHAPE
	ErrBadStride          Status = C.TOPS_ERROR_BAD_STRIDE
	ErrBadAxis            Status = C.TOPS_ERROR_BAD_AXIS
	ErrMissingArgument    Status = C.TOPS_ERROR_MISSING_ARGUMENT
	ErrUnknownArgument    Status = C.TOPS_ERROR_UNKNOWN_ARGUMENT
	ErrWorkspaceTooSmall  Status = C.TOPS_ERROR_WORKSPACE_TOO_SMALL
	ErrContextMismatch    Status = C.TOPS_ERROR_CONTEXT_MISMATCH
	ErrNotSupported       Status = C.TOPS_ERROR_NOT_SUPPORTED
	ErrBackendUnavailable Status = C.TOPS_ERROR_BACKEND_UNAVAILABLE
	ErrOutOfMemory        Status = C.TOPS_ERROR_OUT_OF_MEMORY
	ErrDevice             Status = C.TOPS_ERROR_DEVICE
	ErrDeviceLaunch       Status = C.TOPS_ERROR_DEVICE_LAUNCH
	ErrInternal           Status = C.TOPS_ERROR_INTERNAL
)

// String is the status' C name, e.g. "TOPS_ERROR_BAD_SHAPE".
func (s Status) String() string { return C.GoString(C.tops_status_string(C.tops_status_t(s))) }

// Error is a failed tops call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("tops: %v: %s", e.Status, e.Message) }

// Must be called on the goroutine's OS thread right after the failing call.
func check(s C.tops_status_t) error {
	if s == C.TOPS_SUCCESS {
		return nil
	}
	return &Error{Status: Status(s), Message: C.GoString(C.tops_last_error())}
}

func errorf(s Status, format string, args ...interface{}) error {
	return &Error{Status: s, Message: fmt.Sprintf(format, args...)}
}

// call runs a C call and reads tops_last_error() on the same OS thread.
func call(f func() C.tops_status_t) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(f())
}

// Version is the library's version string.
func Version() string { return C.GoString(C.tops_version()) }

// CPUISA is the instruction set the CPU kernels use.
func CPUISA() string { return C.GoString(C.tops_cpu_isa()) }

// DType is an element type.
type DType int

// Element types.
const (
	Invalid DType = C.TOPS_DTYPE_INVALID
	F32     DType = C.TOPS_DTYPE_F32
	F16     DType = C.TOPS_DTYPE_F16
	BF16    DType = C.TOPS_DTYPE_BF16
	I32     DType = C.TOPS_DTYPE_I32
	I8      DType = C.TOPS_DTYPE_I8
	U8      DType = C.TOPS_DTYPE_U8
)

func (d DType) String() string { return C.GoString(C.tops_dtype_name(C.tops_dtype_t(d))) }

// Backend selects where ops run.
type Backend int

// Backends.
const (
	Default Backend = C.TOPS_BACKEND_DEFAULT
	CPU     Backend = C.TOPS_BACKEND_CPU
	CUDA    Backend = C.TOPS_BACKEND_CUDA
)

// BackendAvailable says whether b can be used here and, if not, why.
func BackendAvailable(b Backend) (bool, string) {
	var why *C.char
	ok := C.tops_backend_available(C.tops_backend_t(b), &why)
	return ok != 0, C.GoString(why)
}

// Context holds a backend, device, stream and thread count.
type Context struct {
	mu sync.Mutex
	h  C.tops_context_t
}

// NewContext creates a context on backend b (device: CUDA ordinal).
func NewContext(b Backend, device int) (*Context, error) {
	var h C.tops_context_t
	if err := call(func() C.tops_status_t { return C.tops_context_create(C.tops_backend_t(b), C.int(device), &h) }); err != nil {
		return nil, err
	}
	c := &Context{h: h}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

func (c *Context) handle() (C.tops_context_t, error) {
	if c == nil || c.h == nil {
		return nil, errorf(ErrNullPointer, "context is nil or closed")
	}
	return c.h, nil
}

// Close destroys the context; later use returns an error. Closing twice is fine.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h != nil {
		C.tops_context_destroy(c.h)
		c.h = nil
	}
	runtime.SetFinalizer(c, nil)
	return nil
}

// SetNumThreads sets the CPU kernels' thread count (0 = OpenMP default).
func (c *Context) SetNumThreads(n int) error {
	h, err := c.handle()
	if err != nil {
		return err
	}
	return call(func() C.tops_status_t { return C.tops_context_set_num_threads(h, C.int(n)) })
}

// SetStream sets the CUDA stream (a cudaStream_t) for later executes.
func (c *Context) SetStream(stream unsafe.Pointer) error {
	h, err := c.handle()
	if err != nil {
		return err
	}
	return call(func() C.tops_status_t { return C.tops_context_set_stream(h, stream) })
}

// Tensor describes a strided tensor: dims and strides in elements; nil
// Strides means dense row-major. The zero Tensor marks an absent optional one.
type Tensor struct {
	DType   DType
	Dims    []int64
	Strides []int64
}

// Dense is a dense row-major tensor.
func Dense(dt DType, dims ...int64) Tensor { return Tensor{DType: dt, Dims: dims} }

// WithStrides returns t with explicit strides.
func (t Tensor) WithStrides(strides ...int64) Tensor { t.Strides = strides; return t }

func (t Tensor) cdesc() (C.tops_tensor_desc_t, error) {
	var d C.tops_tensor_desc_t
	if t.DType == Invalid && len(t.Dims) == 0 {
		return d, nil
	}
	if len(t.Dims) > C.TOPS_MAX_RANK {
		return d, errorf(ErrBadRank, "rank %d exceeds %d", len(t.Dims), C.TOPS_MAX_RANK)
	}
	if t.Strides != nil && len(t.Strides) != len(t.Dims) {
		return d, errorf(ErrBadRank, "%d strides for %d dims", len(t.Strides), len(t.Dims))
	}
	var dims, strides [C.TOPS_MAX_RANK]C.int64_t
	for i, n := range t.Dims {
		dims[i] = C.int64_t(n)
	}
	var sp *C.int64_t
	if t.Strides != nil {
		for i, s := range t.Strides {
			strides[i] = C.int64_t(s)
		}
		sp = &strides[0]
	}
	err := call(func() C.tops_status_t {
		return C.tops_tensor_desc_init(&d, C.tops_dtype_t(t.DType), C.int32_t(len(t.Dims)), &dims[0], sp)
	})
	return d, err
}

// extent is the number of elements a buffer must hold for desc d.
func extent(d *C.tops_tensor_desc_t) int64 {
	n := int64(1)
	for i := 0; i < int(d.rank); i++ {
		if d.dims[i] == 0 {
			return 0
		}
		n += int64(d.dims[i]-1) * int64(d.strides[i])
	}
	return n
}
