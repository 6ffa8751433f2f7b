package tops

/*
#include <tops/tops.h>

// Go pointers may be passed to C as call arguments but not stored in memory
// that is passed, so the argument table is built here from single pointers.
#define TOPS_GO_MAX_ARGS 12
static tops_status_t tops_go_execute(tops_context_t ctx, tops_op_t op, int n, const int *kinds,
		void *p0, void *p1, void *p2, void *p3, void *p4, void *p5,
		void *p6, void *p7, void *p8, void *p9, void *p10, void *p11,
		void *ws, size_t ws_bytes) {
	void *ptrs[TOPS_GO_MAX_ARGS] = {p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11};
	tops_arg_t args[TOPS_GO_MAX_ARGS];
	for (int i = 0; i < n; ++i) {
		args[i].kind = (tops_arg_kind_t)kinds[i];
		args[i].ptr = ptrs[i];
	}
	return tops_op_execute(ctx, op, args, (size_t)n, ws, ws_bytes);
}
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// ArgKind tags an execute argument.
type ArgKind int

// Argument tags; weighted-sum input i is ArgInput0 + i.
const (
	ArgX          ArgKind = C.TOPS_ARG_X
	ArgY          ArgKind = C.TOPS_ARG_Y
	ArgMask       ArgKind = C.TOPS_ARG_MASK
	ArgLengths    ArgKind = C.TOPS_ARG_LENGTHS
	ArgGamma      ArgKind = C.TOPS_ARG_GAMMA
	ArgBeta       ArgKind = C.TOPS_ARG_BETA
	ArgBias       ArgKind = C.TOPS_ARG_BIAS
	ArgResidual   ArgKind = C.TOPS_ARG_RESIDUAL
	ArgPrenorm    ArgKind = C.TOPS_ARG_PRENORM
	ArgMean       ArgKind = C.TOPS_ARG_MEAN
	ArgRstd       ArgKind = C.TOPS_ARG_RSTD
	ArgSlope      ArgKind = C.TOPS_ARG_SLOPE
	ArgInput0     ArgKind = C.TOPS_ARG_INPUT0
	ArgA          ArgKind = C.TOPS_ARG_A
	ArgB          ArgKind = C.TOPS_ARG_B
	ArgC          ArgKind = C.TOPS_ARG_C
	ArgD          ArgKind = C.TOPS_ARG_D
	ArgQ          ArgKind = C.TOPS_ARG_Q
	ArgK          ArgKind = C.TOPS_ARG_K
	ArgV          ArgKind = C.TOPS_ARG_V
	ArgO          ArgKind = C.TOPS_ARG_O
	ArgLSE        ArgKind = C.TOPS_ARG_LSE
	ArgSeqlensK   ArgKind = C.TOPS_ARG_SEQLENS_K
	ArgCuSeqlensQ ArgKind = C.TOPS_ARG_CU_SEQLENS_Q
	ArgCuSeqlensK ArgKind = C.TOPS_ARG_CU_SEQLENS_K
)

// Arg is one execute argument: a host slice (checked against the op's
// descriptor) or a device pointer (unchecked).
type Arg struct {
	Kind   ArgKind
	ptr    unsafe.Pointer
	n      int64   // elements in the slice; -1 for a device pointer
	dtypes []DType // dtypes the slice's element type can hold
	keep   interface{}
}

// F32Arg passes a []float32 (f32 tensors).
func F32Arg(k ArgKind, s []float32) Arg { return sliceArg(k, first(s), len(s), s, F32) }

// U16Arg passes the bits of f16 or bf16 tensors.
func U16Arg(k ArgKind, s []uint16) Arg {
	return sliceArg(k, first(s), len(s), s, F16, BF16)
}

// I32Arg passes a []int32 (lengths, sequence offsets).
func I32Arg(k ArgKind, s []int32) Arg { return sliceArg(k, first(s), len(s), s, I32) }

// U8Arg passes a []uint8 (masks).
func U8Arg(k ArgKind, s []uint8) Arg {
	return sliceArg(k, first(s), len(s), s, U8, I8)
}

// first is the address of s's first element, nil for an empty slice.
func first[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

func sliceArg(k ArgKind, p unsafe.Pointer, n int, keep interface{}, dts ...DType) Arg {
	return Arg{Kind: k, ptr: p, n: int64(n), dtypes: dts, keep: keep}
}

// DeviceArg passes a device pointer (CUDA). The caller guarantees it points
// to a tensor of the op's descriptor on the context's device.
func DeviceArg(k ArgKind, p unsafe.Pointer) Arg { return Arg{Kind: k, ptr: p, n: -1} }

// Op is a validated op with its chosen kernel; immutable, shareable across goroutines.
type Op struct {
	mu    sync.RWMutex
	h     C.tops_op_t
	name  string
	descs map[ArgKind]C.tops_tensor_desc_t
}

func newOp(name string, descs map[ArgKind]C.tops_tensor_desc_t, create func(*C.tops_op_t) C.tops_status_t) (*Op, error) {
	var h C.tops_op_t // a local: cgo forbids pointers into structs holding Go pointers
	if err := call(func() C.tops_status_t { return create(&h) }); err != nil {
		return nil, err
	}
	op := &Op{h: h, name: name, descs: descs}
	runtime.SetFinalizer(op, (*Op).Close)
	return op, nil
}

// Close destroys the op; later use returns an error.
func (op *Op) Close() error {
	if op == nil {
		return nil
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.h != nil {
		C.tops_op_destroy(op.h)
		op.h = nil
	}
	runtime.SetFinalizer(op, nil)
	return nil
}

// KernelName is the kernel the op chose.
func (op *Op) KernelName() string {
	op.mu.RLock()
	defer op.mu.RUnlock()
	if op.h == nil {
		return ""
	}
	return C.GoString(C.tops_op_kernel_name(op.h))
}

// WorkspaceSize is the workspace (bytes) Execute needs.
func (op *Op) WorkspaceSize() (int, error) {
	if op == nil {
		return 0, errorf(ErrNullPointer, "op is nil")
	}
	op.mu.RLock()
	defer op.mu.RUnlock()
	if op.h == nil {
		return 0, errorf(ErrNullPointer, "%s op is closed", op.name)
	}
	var n C.size_t
	err := call(func() C.tops_status_t { return C.tops_op_workspace_size(op.h, &n) })
	return int(n), err
}

// Execute runs the op on ctx with host slices (CPU backend); it allocates the workspace.
func (op *Op) Execute(ctx *Context, args ...Arg) error {
	for _, a := range args {
		if a.n < 0 {
			return errorf(ErrInvalidArgument, "%s: Execute takes host slices; use ExecuteDevice for device pointers", op.name)
		}
	}
	n, err := op.WorkspaceSize()
	if err != nil {
		return err
	}
	var ws []byte
	if n > 0 {
		ws = make([]byte, n)
	}
	return op.execute(ctx, args, first(ws), n)
}

// ExecuteDevice runs the op with device pointers and a caller-provided device
// workspace of WorkspaceSize bytes (CUDA backend).
func (op *Op) ExecuteDevice(ctx *Context, workspace unsafe.Pointer, workspaceBytes int, args ...Arg) error {
	return op.execute(ctx, args, workspace, workspaceBytes)
}

func (op *Op) execute(ctx *Context, args []Arg, ws unsafe.Pointer, wsBytes int) error {
	if op == nil {
		return errorf(ErrNullPointer, "op is nil")
	}
	op.mu.RLock()
	defer op.mu.RUnlock()
	if op.h == nil {
		return errorf(ErrNullPointer, "%s op is closed", op.name)
	}
	if ctx == nil {
		return errorf(ErrNullPointer, "%s: context is nil", op.name)
	}
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	h, err := ctx.handle()
	if err != nil {
		return err
	}
	for _, a := range args {
		if err := op.checkArg(a); err != nil {
			return err
		}
	}
	if len(args) > C.TOPS_GO_MAX_ARGS {
		return errorf(ErrInvalidArgument, "%s: %d arguments, at most %d", op.name, len(args), C.TOPS_GO_MAX_ARGS)
	}
	var kinds [C.TOPS_GO_MAX_ARGS]C.int
	var p [C.TOPS_GO_MAX_ARGS]unsafe.Pointer
	for i, a := range args {
		kinds[i], p[i] = C.int(a.Kind), a.ptr
	}
	err = call(func() C.tops_status_t {
		return C.tops_go_execute(h, op.h, C.int(len(args)), &kinds[0], p[0], p[1], p[2], p[3], p[4], p[5],
			p[6], p[7], p[8], p[9], p[10], p[11], ws, C.size_t(wsBytes))
	})
	runtime.KeepAlive(args)
	return err
}

func (op *Op) checkArg(a Arg) error {
	if a.n < 0 {
		return nil
	}
	d, ok := op.descs[a.Kind]
	if !ok {
		return errorf(ErrUnknownArgument, "%s: argument %d is not one of this op's tensors", op.name, a.Kind)
	}
	dt := DType(d.dtype)
	match := false
	for _, x := range a.dtypes {
		match = match || x == dt
	}
	if !match {
		return errorf(ErrBadDType, "%s: argument %d is %v but the slice holds %v", op.name, a.Kind, dt, a.dtypes)
	}
	if need := extent(&d); a.n < need {
		return errorf(ErrBadShape, "%s: argument %d needs %d elements, the slice has %d", op.name, a.Kind, need, a.n)
	}
	if a.n > 0 && a.ptr == nil {
		return errorf(ErrNullPointer, "%s: argument %d is nil", op.name, a.Kind)
	}
	return nil
}
