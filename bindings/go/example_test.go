package tops_test

import (
	"fmt"

	tops "github.com/tops-project/tops/bindings/go"
)

func Example() {
	ctx, err := tops.NewContext(tops.CPU, 0)
	if err != nil {
		panic(err)
	}
	defer ctx.Close()

	x := []float32{1, 2, 3, 4, 0, 0, 0, 0}
	y := make([]float32, len(x))
	desc := tops.NewSoftmaxDesc(tops.Dense(tops.F32, 2, 4), tops.Dense(tops.F32, 2, 4))
	op, err := ctx.NewSoftmax(desc)
	if err != nil {
		panic(err)
	}
	defer op.Close()
	if err := op.Execute(ctx, tops.F32Arg(tops.ArgX, x), tops.F32Arg(tops.ArgY, y)); err != nil {
		panic(err)
	}
	fmt.Printf("%.3f\n", y)

	err = op.Execute(ctx, tops.F32Arg(tops.ArgX, x[:5]), tops.F32Arg(tops.ArgY, y))
	fmt.Println(err)
	// Output:
	// [0.032 0.087 0.237 0.644 0.250 0.250 0.250 0.250]
	// tops: TOPS_ERROR_BAD_SHAPE: softmax: argument 1 needs 8 elements, the slice has 5
}
