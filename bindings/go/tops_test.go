package tops_test

import (
	"errors"
	"math"
	"math/rand"
	"os"
	"regexp"
	"strings"
	"testing"

	tops "github.com/tops-project/tops/bindings/go"
)

func ctx(t *testing.T) *tops.Context {
	t.Helper()
	c, err := tops.NewContext(tops.CPU, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func randn(n int, seed int64) []float32 {
	r := rand.New(rand.NewSource(seed))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func poison(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// closeTo fails unless ||out-ref|| / ||ref|| < tol and out has no NaN.
func closeTo(t *testing.T, out []float32, ref []float64, tol float64) {
	t.Helper()
	if len(out) != len(ref) {
		t.Fatalf("len %d != %d", len(out), len(ref))
	}
	var num, den float64
	for i := range out {
		if math.IsNaN(float64(out[i])) {
			t.Fatalf("NaN at %d", i)
		}
		d := float64(out[i]) - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	if den == 0 {
		den = 1
	}
	if e := math.Sqrt(num / den); e > tol {
		t.Fatalf("relative error %g > %g", e, tol)
	}
}

// mk(t)(c.NewX(...)) fails the test on error and closes the op at the end.
func mk(t *testing.T) func(*tops.Op, error) *tops.Op {
	return func(op *tops.Op, err error) *tops.Op {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { op.Close() })
		return op
	}
}

func run(t *testing.T, c *tops.Context, op *tops.Op, args ...tops.Arg) {
	t.Helper()
	if err := op.Execute(c, args...); err != nil {
		t.Fatal(err)
	}
}

const tol = 1e-5

func TestVersion(t *testing.T) {
	if !strings.HasPrefix(tops.Version(), "tops ") {
		t.Fatal(tops.Version())
	}
	if ok, why := tops.BackendAvailable(tops.CPU); !ok {
		t.Fatal(why)
	}
}

func TestSoftmaxMasked(t *testing.T) {
	c := ctx(t)
	const rows, n = 5, 37
	x, y := randn(rows*n, 1), poison(rows*n)
	mask := make([]uint8, rows*n)
	for i := range mask {
		if i%3 != 0 && i/n != 2 { // row 2 fully masked
			mask[i] = 1
		}
	}
	d := tops.NewSoftmaxDesc(tops.Dense(tops.F32, rows, n), tops.Dense(tops.F32, rows, n))
	d.Mask, d.Scale = tops.Dense(tops.U8, rows, n), 0.5
	op := mk(t)(c.NewSoftmax(d))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y), tops.U8Arg(tops.ArgMask, mask))
	ref := make([]float64, rows*n)
	for r := 0; r < rows; r++ {
		m, sum := math.Inf(-1), 0.0
		for j := 0; j < n; j++ {
			if mask[r*n+j] != 0 {
				m = math.Max(m, 0.5*float64(x[r*n+j]))
			}
		}
		for j := 0; j < n; j++ {
			if mask[r*n+j] != 0 {
				ref[r*n+j] = math.Exp(0.5*float64(x[r*n+j]) - m)
				sum += ref[r*n+j]
			}
		}
		for j := 0; j < n && sum > 0; j++ {
			ref[r*n+j] /= sum
		}
	}
	closeTo(t, y, ref, tol)
}

func TestTranspose(t *testing.T) {
	c := ctx(t)
	x, y := randn(2*3*4, 2), poison(2*3*4)
	op := mk(t)(c.NewTranspose(tops.Dense(tops.F32, 2, 3, 4), tops.Dense(tops.F32, 4, 2, 3), []int{2, 0, 1}))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y))
	for i := 0; i < 4; i++ {
		for a := 0; a < 2; a++ {
			for b := 0; b < 3; b++ {
				if y[(i*2+a)*3+b] != x[(a*3+b)*4+i] {
					t.Fatalf("y[%d,%d,%d] wrong", i, a, b)
				}
			}
		}
	}
}

func normRef(x, g, b []float64, rows, n int, rms bool, eps float64) []float64 {
	out := make([]float64, rows*n)
	for r := 0; r < rows; r++ {
		s := x[r*n : (r+1)*n]
		mu, v := 0.0, 0.0
		if !rms {
			for _, e := range s {
				mu += e
			}
			mu /= float64(n)
		}
		for _, e := range s {
			v += (e - mu) * (e - mu)
		}
		rstd := 1 / math.Sqrt(v/float64(n)+eps)
		for j := range s {
			out[r*n+j] = (s[j]-mu)*rstd*g[j] + b[j]
		}
	}
	return out
}

func f64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

func TestLayerNormResidual(t *testing.T) {
	c := ctx(t)
	const rows, n = 6, 65
	x, res, g, b, y := randn(rows*n, 3), randn(rows*n, 4), randn(n, 5), randn(n, 6), poison(rows*n)
	d := tops.NewNormDesc(tops.Dense(tops.F32, rows, n), tops.Dense(tops.F32, rows, n))
	d.Gamma, d.Beta, d.Residual = tops.Dense(tops.F32, n), tops.Dense(tops.F32, n), tops.Dense(tops.F32, rows, n)
	op := mk(t)(c.NewNorm(d))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y), tops.F32Arg(tops.ArgGamma, g),
		tops.F32Arg(tops.ArgBeta, b), tops.F32Arg(tops.ArgResidual, res))
	s := f64(x)
	for i := range s {
		s[i] += float64(res[i])
	}
	closeTo(t, y, normRef(s, f64(g), f64(b), rows, n, false, 1e-5), tol)
}

func TestRMSNorm(t *testing.T) {
	c := ctx(t)
	const rows, n = 4, 33
	x, g, y := randn(rows*n, 7), randn(n, 8), poison(rows*n)
	d := tops.NewNormDesc(tops.Dense(tops.F32, rows, n), tops.Dense(tops.F32, rows, n))
	d.RMS, d.Gamma, d.Eps = true, tops.Dense(tops.F32, n), 1e-6
	op := mk(t)(c.NewNorm(d))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y), tops.F32Arg(tops.ArgGamma, g))
	closeTo(t, y, normRef(f64(x), f64(g), make([]float64, n), rows, n, true, 1e-6), tol)
}

func TestReduce(t *testing.T) {
	c := ctx(t)
	x := randn(4*6, 9)
	for _, tc := range []struct {
		op  tops.ReduceOp
		ref func(s []float64) float64
	}{
		{tops.ReduceSum, func(s []float64) float64 {
			r := 0.0
			for _, v := range s {
				r += v
			}
			return r
		}},
		{tops.ReduceMax, func(s []float64) float64 {
			r := math.Inf(-1)
			for _, v := range s {
				r = math.Max(r, v)
			}
			return r
		}},
		{tops.ReduceNorm2, func(s []float64) float64 {
			r := 0.0
			for _, v := range s {
				r += v * v
			}
			return math.Sqrt(r)
		}},
	} {
		y := poison(6)
		op := mk(t)(c.NewReduce(tc.op, tops.Dense(tops.F32, 4, 6), tops.Dense(tops.F32, 6), []int{0}, false))
		run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y))
		ref := make([]float64, 6)
		for j := range ref {
			col := []float64{}
			for i := 0; i < 4; i++ {
				col = append(col, float64(x[i*6+j]))
			}
			ref[j] = tc.ref(col)
		}
		closeTo(t, y, ref, tol)
	}
}

func TestBiasActAndPReLU(t *testing.T) {
	c := ctx(t)
	const rows, n = 3, 20
	x, bias, y := randn(rows*n, 10), randn(n, 11), poison(rows*n)
	op := mk(t)(c.NewBiasAct(tops.Dense(tops.F32, rows, n), tops.Dense(tops.F32, 1, n), tops.Dense(tops.F32, rows, n), tops.ActSiLU))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgBias, bias), tops.F32Arg(tops.ArgY, y))
	ref := make([]float64, rows*n)
	for i := range ref {
		s := float64(x[i]) + float64(bias[i%n])
		ref[i] = s / (1 + math.Exp(-s))
	}
	closeTo(t, y, ref, tol)

	slope, z := randn(rows, 12), poison(rows*n)
	op = mk(t)(c.NewPReLU(tops.Dense(tops.F32, rows, n), tops.Dense(tops.F32, rows, 1), tops.Dense(tops.F32, rows, n)))
	run(t, c, op, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgSlope, slope), tops.F32Arg(tops.ArgY, z))
	for i := range ref {
		ref[i] = float64(x[i])
		if x[i] <= 0 {
			ref[i] *= float64(slope[i/n])
		}
	}
	closeTo(t, z, ref, tol)
}

func TestWeightedSum(t *testing.T) {
	c := ctx(t)
	a, b, y := randn(12, 13), randn(12, 14), poison(12)
	op := mk(t)(c.NewWeightedSum([]tops.Tensor{tops.Dense(tops.F32, 3, 4), tops.Dense(tops.F32, 3, 4)},
		[]float32{2, -0.5}, tops.Dense(tops.F32, 3, 4)))
	run(t, c, op, tops.F32Arg(tops.ArgInput0, a), tops.F32Arg(tops.ArgInput0+1, b), tops.F32Arg(tops.ArgY, y))
	ref := make([]float64, 12)
	for i := range ref {
		ref[i] = 2*float64(a[i]) - 0.5*float64(b[i])
	}
	closeTo(t, y, ref, tol)
}

func TestGemmBiasReLUTransB(t *testing.T) {
	c := ctx(t)
	const m, n, k = 7, 9, 13
	a, w, bias, d := randn(m*k, 15), randn(n*k, 16), randn(n, 17), poison(m*n)
	g := tops.NewGemmDesc(tops.Dense(tops.F32, m, k), tops.Dense(tops.F32, n, k), tops.Dense(tops.F32, m, n))
	g.TransB, g.Bias, g.Act = true, tops.Dense(tops.F32, n), tops.ActReLU
	op := mk(t)(c.NewGemm(g))
	run(t, c, op, tops.F32Arg(tops.ArgA, a), tops.F32Arg(tops.ArgB, w), tops.F32Arg(tops.ArgD, d), tops.F32Arg(tops.ArgBias, bias))
	ref := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := float64(bias[j])
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(w[j*k+p])
			}
			ref[i*n+j] = math.Max(s, 0)
		}
	}
	closeTo(t, d, ref, tol)
}

func TestAttentionCausal(t *testing.T) {
	c := ctx(t)
	const b, s, h, dim = 2, 11, 2, 8
	n := b * s * h * dim
	q, k, v, o := randn(n, 18), randn(n, 19), randn(n, 20), poison(n)
	shape := tops.Dense(tops.F32, b, s, h, dim)
	d := tops.NewAttentionDesc(shape, shape, shape, shape)
	d.Causal = true
	op, err := c.NewAttention(d)
	if err != nil {
		var te *tops.Error
		if errors.As(err, &te) && te.Status == tops.ErrNotSupported {
			t.Skip("CPU attention not supported in this build: ", err)
		}
		t.Fatal(err)
	}
	defer op.Close()
	run(t, c, op, tops.F32Arg(tops.ArgQ, q), tops.F32Arg(tops.ArgK, k), tops.F32Arg(tops.ArgV, v), tops.F32Arg(tops.ArgO, o))
	at := func(t []float32, bi, si, hi, di int) float64 { return float64(t[((bi*s+si)*h+hi)*dim+di]) }
	ref := make([]float64, n)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			for i := 0; i < s; i++ {
				p := make([]float64, i+1)
				m, sum := math.Inf(-1), 0.0
				for j := 0; j <= i; j++ {
					for e := 0; e < dim; e++ {
						p[j] += at(q, bi, i, hi, e) * at(k, bi, j, hi, e)
					}
					p[j] /= math.Sqrt(dim)
					m = math.Max(m, p[j])
				}
				for j := range p {
					p[j] = math.Exp(p[j] - m)
					sum += p[j]
				}
				for e := 0; e < dim; e++ {
					acc := 0.0
					for j := range p {
						acc += p[j] / sum * at(v, bi, j, hi, e)
					}
					ref[((bi*s+i)*h+hi)*dim+e] = acc
				}
			}
		}
	}
	closeTo(t, o, ref, tol)
}

func TestBF16Softmax(t *testing.T) {
	c := ctx(t)
	x := []uint16{tops.BF16FromFloat32(1), tops.BF16FromFloat32(2), tops.BF16FromFloat32(3), tops.BF16FromFloat32(4)}
	y := make([]uint16, 4)
	op := mk(t)(c.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.BF16, 4), tops.Dense(tops.BF16, 4))))
	run(t, c, op, tops.U16Arg(tops.ArgX, x), tops.U16Arg(tops.ArgY, y))
	ref := []float64{math.Exp(-3), math.Exp(-2), math.Exp(-1), 1}
	sum := ref[0] + ref[1] + ref[2] + ref[3]
	out := make([]float32, 4)
	for i := range ref {
		ref[i] /= sum
		out[i] = tops.BF16ToFloat32(y[i])
	}
	closeTo(t, out, ref, 1e-2)
}

// errStatus fails unless err is a *tops.Error with status s and a message.
func errStatus(t *testing.T, err error, s tops.Status) {
	t.Helper()
	var te *tops.Error
	if !errors.As(err, &te) || te.Status != s || te.Message == "" {
		t.Fatalf("want %v with a message, got %v", s, err)
	}
}

func TestBadInput(t *testing.T) {
	c := ctx(t)
	// mismatched shapes: the library's validation
	_, err := c.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.F32, 3, 4), tops.Dense(tops.F32, 3, 5)))
	errStatus(t, err, tops.ErrBadShape)
	_, err = c.NewGemm(tops.NewGemmDesc(tops.Dense(tops.F32, 3, 4), tops.Dense(tops.F32, 5, 6), tops.Dense(tops.F32, 3, 6)))
	errStatus(t, err, tops.ErrBadShape)
	_, err = c.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.F32, 1, 1, 1, 1, 1, 1, 1, 1, 1), tops.Dense(tops.F32, 1)))
	errStatus(t, err, tops.ErrBadRank)

	op := mk(t)(c.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.F32, 3, 4), tops.Dense(tops.F32, 3, 4))))
	x, y := randn(12, 1), make([]float32, 12)
	// wrong slice length, wrong element type, unknown argument, missing argument
	errStatus(t, op.Execute(c, tops.F32Arg(tops.ArgX, x[:11]), tops.F32Arg(tops.ArgY, y)), tops.ErrBadShape)
	errStatus(t, op.Execute(c, tops.U16Arg(tops.ArgX, make([]uint16, 12)), tops.F32Arg(tops.ArgY, y)), tops.ErrBadDType)
	errStatus(t, op.Execute(c, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y), tops.F32Arg(tops.ArgA, x)), tops.ErrUnknownArgument)
	errStatus(t, op.Execute(c, tops.F32Arg(tops.ArgX, x)), tops.ErrMissingArgument)
	errStatus(t, op.Execute(nil, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y)), tops.ErrNullPointer)
	errStatus(t, op.Execute(c, tops.DeviceArg(tops.ArgX, nil), tops.F32Arg(tops.ArgY, y)), tops.ErrInvalidArgument)
	var nilOp *tops.Op
	errStatus(t, nilOp.Execute(c, tops.F32Arg(tops.ArgX, x)), tops.ErrNullPointer)

	// closed context, closed op: errors, not crashes
	c2, err := tops.NewContext(tops.CPU, 0)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	c2.Close()
	errStatus(t, op.Execute(c2, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y)), tops.ErrNullPointer)
	_, err = c2.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.F32, 3), tops.Dense(tops.F32, 3)))
	errStatus(t, err, tops.ErrNullPointer)
	op.Close()
	errStatus(t, op.Execute(c, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y)), tops.ErrNullPointer)
	var nilCtx *tops.Context
	_, err = nilCtx.NewTranspose(tops.Dense(tops.F32, 1), tops.Dense(tops.F32, 1), []int{0})
	errStatus(t, err, tops.ErrNullPointer)
}

func TestReadmeExampleIsTested(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil || string(m[1]) != string(src) {
		t.Fatal("README.md's go example must be example_test.go verbatim")
	}
}

func TestOpSharedAcrossGoroutines(t *testing.T) {
	c := ctx(t)
	op := mk(t)(c.NewSoftmax(tops.NewSoftmaxDesc(tops.Dense(tops.F32, 2, 3), tops.Dense(tops.F32, 2, 3))))
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			gc, err := tops.NewContext(tops.CPU, 0)
			if err != nil {
				errs <- err
				return
			}
			defer gc.Close()
			x := []float32{float32(g), float32(g), float32(g), 1, 1, 1}
			y := make([]float32, 6)
			if err := op.Execute(gc, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y)); err != nil {
				errs <- err
				return
			}
			for _, v := range y {
				if math.Abs(float64(v)-1.0/3) > 1e-6 {
					errs <- errors.New("wrong softmax value")
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
